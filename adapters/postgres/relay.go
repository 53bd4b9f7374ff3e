package postgres

import (
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/outbox"
)

// RelayConfig configures a relay: the shared outbox.RelayConfig, whose
// Source and Tenants the relay options set. Name defaults to
// "<route>-relay"; Destination is required.
type RelayConfig = outbox.RelayConfig

// Relay adds a tenant-global relay over an outbox route of the module: it
// claims rows unbound and delivers each under its own tenant (binding
// per-row). Over a tenant-aware or routed outbox it is refused at fx.New
// with tenant_global_required: use ShardedRelay there.
func Relay(route string, rc RelayConfig) Option {
	return relayOption(route, nil, rc)
}

// ShardedRelay adds a relay with one bound pass per tenant that tenants
// returns; each pass claims only its tenant's rows (its rows, schema or
// pool). A failing tenants fails the app's start. The set is read again
// every RelayConfig.Refresh (default 5 s): a tenant provisioned at run time
// is relayed within that delay, one that left the set stops after its
// pass in flight.
func ShardedRelay(route string, tenants TenantsFunc, rc RelayConfig) Option {
	return relayOption(route, tenants, rc)
}

func relayOption(route string, tenants TenantsFunc, rc RelayConfig) Option {
	if rc.Name == "" {
		rc.Name = route + "-relay"
	}
	w := workerSpec{name: rc.Name, route: route, what: "relay", kinds: []floors.Kind{kindOutbox}, binding: floors.PerRow}
	if tenants != nil {
		w.binding = floors.Sharded
	}
	if rc.Destination == nil {
		w.bad = append(w.bad, problem{"needs a Destination", "set RelayConfig.Destination to the sink each outbox row is delivered to"})
	}
	w.build = func(obj any, log workerLog) (runner, error) {
		cfg := rc
		cfg.Logger = log(cfg.Logger)
		cfg.Source, cfg.Tenants = obj.(*Outbox), nil
		if tenants != nil {
			cfg.Tenants = tenants
		}
		return outbox.NewRelay(cfg)
	}
	return func(c *config) { c.workers = append(c.workers, w) }
}
