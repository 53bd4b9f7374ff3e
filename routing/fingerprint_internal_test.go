package routing

import "testing"

func TestFingerprint(t *testing.T) {
	a := Credentials{Endpoint: "h", User: "u", Secret: "p", Params: map[string]string{"db": "x", "tls": "on"}}
	b := Credentials{Endpoint: "h", User: "u", Secret: "p", Params: map[string]string{"tls": "on", "db": "x"}}
	if a.fingerprint() != b.fingerprint() {
		t.Error("parameter order changed the fingerprint")
	}
	for _, c := range []Credentials{
		{Endpoint: "h", User: "u", Secret: "p", Params: map[string]string{"db": "y", "tls": "on"}}, // same names, another value
		{Endpoint: "h", User: "u", Secret: "p", Params: map[string]string{"db": "x", "tls": "off"}},
		{Endpoint: "h", User: "u", Secret: "p", Params: map[string]string{"dbx": "", "tls": "on"}}, // name/value shift
		{Endpoint: "h", User: "u", Secret: "q", Params: a.Params},
		{Endpoint: "hu", User: "", Secret: "p", Params: a.Params}, // concatenation shift
		{Endpoint: "h", User: "u", Secret: "p"},
	} {
		if c.fingerprint() == a.fingerprint() {
			t.Errorf("%+v collides with %+v", c, a)
		}
	}
	if s := a.fingerprint().String(); len(s) != 12 {
		t.Errorf("short form %q", s)
	}
}
