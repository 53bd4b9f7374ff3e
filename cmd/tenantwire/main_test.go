package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestGeneratedDocsUpToDate fails when docs/tenancy-matrix.md or
// docs/errors.md drift from what the backends' rules and the code catalogue
// produce. Regenerate with `make matrix`.
func TestGeneratedDocsUpToDate(t *testing.T) {
	for _, c := range []struct {
		path string
		args []string
	}{
		{"../../docs/tenancy-matrix.md", []string{"matrix", "--format", "markdown"}},
		{"../../docs/errors.md", []string{"errors"}},
	} {
		var out, errOut bytes.Buffer
		if code := run(c.args, &out, &errOut); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errOut.String())
		}
		have, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatalf("%s: %v (run make matrix)", c.path, err)
		}
		if !bytes.Equal(have, out.Bytes()) {
			t.Errorf("%s is out of date: run `make matrix` and commit the result", c.path)
		}
	}
}

func TestCommands(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"matrix"}, 0, "memory"},
		{[]string{"matrix", "--format", "json"}, 0, `"backend": "memory"`},
		{[]string{"matrix", "--format", "yaml"}, 2, "unknown format"},
		{[]string{"explain", "tenant_global_required"}, 0, "sharded"},
		{[]string{"explain", "kafka_tenancy_validation_failed"}, 0, "capability mismatch"},
		{[]string{"explain", "postgres_dynamic_read_wrote"}, 0, "read-only SQL"},
		{[]string{"explain", "nope"}, 1, "unknown code"},
		{[]string{}, 2, "usage"},
		{[]string{"frobnicate"}, 2, "unknown command"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(c.args, &out, &errOut)
		all := out.String() + errOut.String()
		if code != c.code || !strings.Contains(all, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d containing %q", c.args, code, all, c.code, c.want)
		}
	}
}
