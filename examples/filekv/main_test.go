package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestFileKV(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"profiles", "namespace", "carts", "tagged",
		"profiles: acme reads k-1: acme's; globex sees it: false; globex lists 0 keys",
		"carts: acme reads k-1: acme's; globex sees it: false; globex lists 0 keys", "no tenant bound: tenant_unbound"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
