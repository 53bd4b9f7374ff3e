package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		`acme reads n1                          -> 200 {"text":"acme's plan"}`,
		`globex reads n1                        -> 200 {"text":"globex's plan"}`,
		"globex reads n2                        -> 404",
		"no header (default tenant) reads n2    -> 404",
		`malformed header reads n1              -> 400 {"error":"invalid tenant header (must be a UUID)","code":"invalid_tenant_header"}`,
		"tenant listener: /tenancy/matrix       -> 404",
		"tenant listener: /metrics              -> 404",
		"tenant listener: blocked /debug/vars   -> 404",
		`operator listener: /healthz            -> 200 {"status":"ok","mode":"header","header_mode":true,"header":"X-Tenant-ID","trusted_proxy":true`,
		"operator listener: /metrics            -> 200",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "acme only") != 0 {
		t.Errorf("another tenant saw acme's n2:\n%s", got)
	}
}
