package postgres

import (
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
)

// RelayConfig configures a relay: the shared outbox.RelayConfig, whose
// Source the relay option sets. Name defaults to "<route>-relay";
// Destination is required.
type RelayConfig = outbox.RelayConfig

// Relay adds a relay over an outbox route of the module. With
// RelayConfig.Tenants nil it is tenant-global: it claims rows unbound and
// delivers each under its own tenant (binding per-row); over a tenant-aware
// or routed outbox that is refused at fx.New with tenant_global_required.
// With Tenants set it is sharded: one bound pass per tenant Tenants returns,
// each claiming only its tenant's rows (its rows, schema or pool). A failing
// Tenants fails the app's start. The set is read again every
// RelayConfig.Refresh (default 5 s): a tenant provisioned at run time is
// relayed within that delay, one that left the set stops after its pass in
// flight.
func Relay(route string, rc RelayConfig) Option {
	if rc.Name == "" {
		rc.Name = route + "-relay"
	}
	w := workerSpec{name: rc.Name, route: route, what: "relay", kinds: []floors.Kind{kindOutbox}, binding: floors.PerRow}
	if rc.Tenants != nil {
		w.binding = floors.Sharded
	}
	if rc.Destination == nil {
		w.bad = append(w.bad, tenancy.Problem{Detail: "needs a Destination", Fix: "set RelayConfig.Destination to the sink each outbox row is delivered to"})
	}
	w.checked(rc.Check("postgres.RelayConfig"))
	w.build = func(obj any, wire workerWire) (runner, error) {
		cfg := rc
		cfg.WorkerConfig = wire(cfg.WorkerConfig)
		cfg.Source = obj.(*Outbox)
		return outbox.NewRelay(cfg)
	}
	return modules.Own(func(c *config) { c.workers = append(c.workers, w) })
}
