package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func runWith(env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = runEnv(args, &out, &errOut, func(k string) string { return env[k] })
	return code, out.String(), errOut.String()
}

// Every command answers -h and --help on stdout with exit 0, naming itself.
func TestHelpOnEveryCommand(t *testing.T) {
	for name := range commands(func(string) string { return "" }) {
		for _, flag := range []string{"-h", "--help"} {
			code, out, errOut := runWith(nil, name, flag)
			if code != 0 || !strings.Contains(out, "usage: tenantwire "+name) || errOut != "" {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q", name, flag, code, out, errOut)
			}
		}
	}
	for _, flag := range []string{"-h", "--help", "help"} {
		if code, out, _ := runWith(nil, flag); code != 0 || !strings.Contains(out, "version") {
			t.Errorf("%s: exit %d, %q", flag, code, out)
		}
	}
	if code, _, errOut := runWith(nil, "matrix", "--bogus"); code != 2 || !strings.Contains(errOut, "usage: tenantwire matrix") {
		t.Errorf("matrix --bogus: exit %d, stderr %q", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runWith(nil, "version")
	// A test binary is built from the source tree: no module version.
	if code != 0 || out != "tenantwire (devel)\n" {
		t.Errorf("exit %d, %q", code, out)
	}
	if code, _, _ := runWith(nil, "version", "extra"); code != 2 {
		t.Errorf("version extra: exit %d, want 2", code)
	}
}

func TestExplainUnknownSuggestsClosest(t *testing.T) {
	for _, c := range []struct {
		typo string
		want string
	}{
		{"tenant_unbond", "tenant_unbound"},
		{"TENANT_UNBOUND ", "tenant_unbound"},
		{"trusted_proxy", "trusted_proxy_required"},
		{"tenant_global_requird", "tenant_global_required"},
		{"postgres_tenancy_validation", "postgres_tenancy_validation_failed"},
		{"route_class_overlaps", "route_class_overlap"},
	} {
		code, out, errOut := runWith(nil, "explain", c.typo)
		if code != 1 || out != "" {
			t.Errorf("%q: exit %d, stdout %q", c.typo, code, out)
		}
		hint, _, _ := strings.Cut(errOut, "`tenantwire errors`")
		if !strings.Contains(hint, "did you mean:\n  "+c.want+"\n") {
			t.Errorf("%q: hint %q, want %s first", c.typo, hint, c.want)
		}
	}
	code, _, errOut := runWith(nil, "explain", "zzzzzzzz")
	if code != 1 || strings.Contains(errOut, "did you mean") {
		t.Errorf("far code: exit %d, %q", code, errOut)
	}
}

func TestClosestCodesAreKnownAndBounded(t *testing.T) {
	known := knownCodes()
	got := closestCodes("tenant", known, 3)
	if len(got) == 0 || len(got) > 3 {
		t.Fatalf("%v", got)
	}
	for _, c := range got {
		if !slices.Contains(known, c) {
			t.Errorf("%q is not a known code", c)
		}
	}
}

func widest(s string) int {
	n := 0
	for line := range strings.Lines(s) {
		n = max(n, utf8.RuneCountInString(strings.TrimRight(line, "\n")))
	}
	return n
}

// The text matrix fits the terminal: 80 columns by default, $COLUMNS when
// set, --width over both, and 0 for the unwrapped table.
func TestMatrixFitsTheTerminal(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		args []string
		max  int
	}{
		{nil, nil, 80},
		{map[string]string{"COLUMNS": "60"}, nil, 60},
		{map[string]string{"COLUMNS": "junk"}, nil, 80},
		{map[string]string{"COLUMNS": "200"}, []string{"--width", "72"}, 72},
	} {
		code, out, errOut := runWith(c.env, append([]string{"matrix"}, c.args...)...)
		if code != 0 {
			t.Fatalf("%v %v: exit %d: %s", c.env, c.args, code, errOut)
		}
		if w := widest(out); w > c.max {
			t.Errorf("%v %v: a line of %d columns, want at most %d", c.env, c.args, w, c.max)
		}
		for _, want := range []string{"postgres document", "per-tenant resolver on read, write, history", "routed client"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v %v: output lacks %q", c.env, c.args, want)
			}
		}
	}
	_, wide, _ := runWith(nil, "matrix", "--width", "0")
	if widest(wide) <= 80 || !strings.HasPrefix(wide, "BACKEND") {
		t.Errorf("--width 0 should print the unwrapped table")
	}
	_, usage, _ := runWith(nil, "--help")
	if w := widest(usage); w > 80 {
		t.Errorf("usage is %d columns wide", w)
	}
}
