package tenanthttp

import "testing"

func TestHostLabel(t *testing.T) {
	for in, want := range map[string]string{
		"alpha.example.com": "alpha", "ALPHA.example.com:80": "alpha", "localhost:8080": "localhost",
		"[::1]:80": "", "": "", "127.0.0.1:9": "127",
	} {
		if got := hostLabel(in); got != want {
			t.Errorf("hostLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
