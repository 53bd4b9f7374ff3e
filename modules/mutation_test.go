package modules_test

// A test that pins down what mutation testing found unchecked (make
// mutate; docs/reliability.md).

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// The app's own logger, not the process default, receives the warnings.
func TestWarningsGoToTheAppLogger(t *testing.T) {
	var buf bytes.Buffer
	app := fx.New(
		fx.NopLogger,
		fx.Supply(slog.New(slog.NewTextHandler(&buf, nil))),
		module("orders", tenancy.Namespace, floors.Route{Name: "docs", Kind: "document", TenantAware: true,
			Relations: []floors.Relation{{Role: "read", PerTenant: true}}}),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "redundant tenant marker") || !strings.Contains(out, "route=docs") {
		t.Fatalf("app logger got %q, want the redundant-marker warning for route docs", out)
	}
}
