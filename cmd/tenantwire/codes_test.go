package main

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
)

// Every backend's own codes are named after it, fully documented, and
// collide with no shared code nor another backend's.
func TestBackendCodesNamedAfterTheirBackend(t *testing.T) {
	seen := map[string]string{}
	for _, d := range floors.CodeDocs {
		seen[d.Code] = "shared"
	}
	for _, b := range Backends {
		for _, d := range b.Codes {
			if !strings.HasPrefix(d.Code, b.Name+"_") {
				t.Errorf("%s code %q is not named after its backend", b.Name, d.Code)
			}
			if d.When == "" || d.Meaning == "" || d.Fix == "" {
				t.Errorf("%s code %q is not fully documented: %+v", b.Name, d.Code, d)
			}
			if other, dup := seen[d.Code]; dup {
				t.Errorf("%s code %q is also %s's", b.Name, d.Code, other)
			}
			seen[d.Code] = b.Name
		}
	}
	for _, c := range []string{"postgres_dynamic_read_wrote", "postgres_dynamic_read_unconfined"} {
		if seen[c] != "postgres" {
			t.Errorf("%s is documented by %q, want postgres", c, seen[c])
		}
	}
}
