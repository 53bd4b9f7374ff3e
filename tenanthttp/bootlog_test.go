package tenanthttp_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenanthttp"
)

// The boot line states whether a request naming no tenant is refused
// (require_tenant), beside the mode and the proxy assertion: an operator
// reading it knows what such a request gets.
func TestBootLogStatesRequireTenant(t *testing.T) {
	for _, require := range []bool{true, false} {
		var logs bytes.Buffer
		app := fx.New(fx.NopLogger,
			fx.Supply(slog.New(slog.NewTextHandler(&logs, nil))),
			tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true, RequireTenant: require}),
			noteRoutes(),
		)
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{true: "require_tenant=true", false: "require_tenant=false"}[require]
		if line := logs.String(); !strings.Contains(line, "tenant resolution") || !strings.Contains(line, want) {
			t.Fatalf("boot log lacks %s: %s", want, line)
		}
	}
}
