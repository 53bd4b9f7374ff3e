package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/internal/testsvc"
)

func TestRun(t *testing.T) {
	testsvc.PostgresURL(t) // skips loudly (fails under CI) without PostgreSQL
	defer goleak.VerifyNone(t)
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"order-4 rolled back (an order needs at least one item): stored=false",
		"global-relay acme     received order-1 placed, order-3 placed",
		"global-relay globex   received order-2 placed",
		"sharded-relay acme    received order-1 audited, order-3 audited",
		"sharded-relay globex  received order-2 audited",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "\n") != 5 { // nothing of order-4 was delivered
		t.Errorf("unexpected lines:\n%s", got)
	}
}
