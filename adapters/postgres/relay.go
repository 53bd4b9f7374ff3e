package postgres

import (
	"log/slog"
	"time"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/outbox"
)

// RelayConfig configures an outbox relay.
type RelayConfig struct {
	// Name names the worker in the wiring; default "<route>-relay".
	Name string
	// Destination receives every row, under the row's tenant (required).
	Destination outbox.Destination
	// BatchSize is the most rows claimed per pass (default 100).
	BatchSize int
	// Idle is the wait when nothing is pending (default 200ms); errors
	// back off doubling up to MaxBackoff (default 5s).
	Idle, MaxBackoff time.Duration
	// Wake, when set, cuts an idle wait short.
	Wake   <-chan struct{}
	Logger *slog.Logger
}

// Relay adds a tenant-global relay over an outbox route of the module: it
// claims rows unbound and delivers each under its own tenant (binding
// per-row). Over a tenant-aware or routed outbox it is refused at fx.New
// with tenant_global_required: use ShardedRelay there.
func Relay(route string, rc RelayConfig) Option {
	return relayOption(route, nil, rc)
}

// ShardedRelay adds a relay with one bound pass per tenant that tenants
// returns at start; each pass claims only its tenant's rows (its rows,
// schema or pool). A failing tenants fails the app's start.
func ShardedRelay(route string, tenants TenantsFunc, rc RelayConfig) Option {
	return relayOption(route, tenants, rc)
}

func relayOption(route string, tenants TenantsFunc, rc RelayConfig) Option {
	if rc.Name == "" {
		rc.Name = route + "-relay"
	}
	w := workerSpec{name: rc.Name, route: route, what: "relay", kinds: []floors.Kind{KindOutbox}, binding: floors.PerRow}
	if tenants != nil {
		w.binding = floors.Sharded
	}
	if rc.Destination == nil {
		w.bad = append(w.bad, "needs a Destination")
	}
	w.build = func(obj any) (runner, error) {
		cfg := outbox.RelayConfig{
			Name: rc.Name, Source: obj.(*OutboxRoute), Destination: rc.Destination,
			BatchSize: rc.BatchSize, Idle: rc.Idle, MaxBackoff: rc.MaxBackoff, Wake: rc.Wake, Logger: rc.Logger,
		}
		if tenants != nil {
			cfg.Tenants = tenants
		}
		return outbox.NewRelay(cfg)
	}
	return func(c *config) { c.workers = append(c.workers, w) }
}
