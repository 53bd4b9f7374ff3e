package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMisconfiguredRefusesAll(t *testing.T) {
	var out bytes.Buffer
	if !run(&out) {
		t.Fatal("no wiring was refused")
	}
	for _, want := range []string{"refused: statement_origin_isolation_floor", "refused: memory_tenancy_validation_failed", "refused: tenant_global_required"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "accepted") || strings.Contains(out.String(), "OnStart hooks run: true") {
		t.Errorf("a wiring was accepted or started:\n%s", out.String())
	}
}

// TestExitCode runs the program as `go run` would and requires exit 1.
func TestExitCode(t *testing.T) {
	if os.Getenv("TENANTWIRE_EXAMPLE_CHILD") == "1" {
		main()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExitCode$")
	cmd.Env = append(os.Environ(), "TENANTWIRE_EXAMPLE_CHILD=1")
	out, err := cmd.CombinedOutput()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\n%s", err, out)
	}
}
