package modules_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/modules"
)

type pingCore struct {
	routed bool
	err    error
	pings  int
}

// ProvideServerCheck asks a plain module's server, its error failing the
// check, and passes a routed module's without a call.
func TestProvideServerCheck(t *testing.T) {
	down := errors.New("server down")
	for _, c := range []*pingCore{{err: down}, {}, {routed: true, err: down}} {
		var ready modules.Readiness
		app := fx.New(fx.NopLogger, fx.Supply(c),
			modules.ProvideServerCheck("m", "demo", func(c *pingCore) bool { return c.routed },
				func(_ context.Context, c *pingCore) error { c.pings++; return c.err }),
			fx.Populate(&ready))
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		ok, res := ready.Check(context.Background(), time.Second)
		wantPings, wantOK := 1, c.err == nil
		if c.routed {
			wantPings, wantOK = 0, true
		}
		if ok != wantOK || c.pings != wantPings || len(res) != 1 || res[0].Module != "m" || res[0].Name != "m/server" || res[0].Backend != "demo" ||
			(!wantOK && res[0].Error != down.Error()) {
			t.Fatalf("routed=%v err=%v: ready %v after %d pings, results %+v", c.routed, c.err, ok, c.pings, res)
		}
	}
}
