package modules_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"testing/slogtest"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestTenantHandlerIsAHandler: the wrapper keeps every rule of a slog
// Handler (the standard library's conformance test).
func TestTenantHandlerIsAHandler(t *testing.T) {
	var buf bytes.Buffer
	slogtest.Run(t, func(*testing.T) slog.Handler {
		buf.Reset()
		return modules.TenantHandler(slog.NewJSONHandler(&buf, nil))
	}, func(*testing.T) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	})
}

// TestTenantHandlerAddsTheBoundTenant: a record logged with a bound
// context names its tenant once; unbound, or naming it already, it is left
// as it is.
func TestTenantHandlerAddsTheBoundTenant(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(modules.TenantHandler(slog.NewTextHandler(&buf, nil))).With("module", "shop")
	id := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	log.InfoContext(tenancy.WithTenant(context.Background(), id), "order placed", "order", "o-1")
	log.InfoContext(context.Background(), "no tenant")
	log.InfoContext(tenancy.WithTenant(context.Background(), id), "named", "tenant", "given")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "tenant="+id.String()) || !strings.Contains(lines[0], "module=shop") ||
		strings.Contains(lines[1], "tenant=") || strings.Count(lines[2], "tenant=") != 1 {
		t.Fatalf("lines:\n%s", buf.String())
	}
}

// TestTenantHandlerAddsTheCallSite: a context that carries a call site
// adds its module and route, once, unless the record or the logger names
// them already.
func TestTenantHandlerAddsTheCallSite(t *testing.T) {
	var buf bytes.Buffer
	id := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	ctx := modules.WithCallSite(tenancy.WithTenant(context.Background(), id), "bus", "orders")
	log := slog.New(modules.TenantHandler(slog.NewTextHandler(&buf, nil)))
	log.InfoContext(ctx, "handled")
	log.With(modules.KeyModule, "mine").InfoContext(ctx, "logger names the module")
	log.InfoContext(ctx, "record names the route", modules.KeyRoute, "given")
	log.InfoContext(modules.WithCallSite(context.Background(), "bus", "orders"), "no tenant")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		"tenant=" + id.String() + " module=bus route=orders",
		"module=mine tenant=",
		"route=given tenant=" + id.String() + " module=bus",
		"module=bus route=orders",
	}
	if len(lines) != len(want) {
		t.Fatalf("lines:\n%s", buf.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) || strings.Count(lines[i], "module=") != 1 || strings.Count(lines[i], "route=") != 1 {
			t.Errorf("line %d = %q, want it to contain %q once", i, lines[i], w)
		}
	}
	if strings.Contains(lines[3], "tenant=") {
		t.Errorf("an unbound context named a tenant: %q", lines[3])
	}
}
