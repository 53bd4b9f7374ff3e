package modules

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/routing"
)

const readyGroup = `group:"tenantwire_ready"`

// ReadyCheck is one module's readiness: whether its server answers
// through the module's own client, and whether what the routes need
// (a required migration version) is there.
type ReadyCheck struct {
	Module, Backend string
	// Name says which of the module's checks this is (ReadyServer,
	// ReadyVersion, or a backend's own): a module may have several, and
	// its result is named "<module>/<Name>".
	Name  string
	Check func(ctx context.Context) error
}

// The names of the checks the kit adds.
const (
	// ReadyServer asks the module's server through its own client.
	ReadyServer = "server"
	// ReadyVersion is the module's start-up version check, run again.
	ReadyVersion = "version"
)

// ProvideReadyCheck adds the module's readiness check, built from its core
// C when the app asks for it.
func ProvideReadyCheck[C any](build func(C) ReadyCheck) fx.Option {
	return fx.Provide(fx.Annotate(func(c C) *ReadyCheck { r := build(c); return &r }, fx.ResultTags(readyGroup)))
}

// ProvideServerCheck adds the readiness check of a module that asks its
// server through its own client: ping, on its core C. A routed module has
// no one server to ask (each tenant's is asked at its first call), so
// when routed says so of its core the check passes without a call.
func ProvideServerCheck[C any](module, backend string, routed func(C) bool, ping func(context.Context, C) error) fx.Option {
	return ProvideReadyCheck(func(c C) ReadyCheck {
		return ReadyCheck{Module: module, Backend: backend, Name: ReadyServer, Check: func(ctx context.Context) error {
			if routed(c) {
				return nil
			}
			return ping(ctx, c)
		}}
	})
}

// Readiness is every module's readiness check; inject it to serve a
// readiness endpoint (tenanthttp serves GET /readyz with it).
type Readiness struct {
	fx.In
	Checks []*ReadyCheck `group:"tenantwire_ready"`
}

// ReadyResult is one check's answer.
type ReadyResult struct {
	// Name is the check's own: "<module>/<check>" ("orders/server",
	// "orders/version"), the module alone for a check without a name.
	Name    string `json:"name"`
	Module  string `json:"module"`
	Backend string `json:"backend"`
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
	// Routed is a routed module's per-tenant client pool: clients open,
	// slots in use against MaxClients, tenants bound, clients retired.
	// It is on the module's server check, informs and never fails it: a
	// full pool waits, it is not down.
	Routed *RoutedState `json:"routed,omitempty"`
}

// RoutedState is a routed module's client pool as readiness reports it.
type RoutedState struct {
	Clients    int   `json:"clients"`
	SlotsUsed  int   `json:"slots_used"`
	MaxClients int   `json:"max_clients"`
	Tenants    int   `json:"tenants"`
	Retired    int64 `json:"retired"`
}

// Check runs every module's check at once, each bounded by timeout, and
// reports them in name order; ready is true when every one passed.
func (r Readiness) Check(ctx context.Context, timeout time.Duration) (ready bool, results []ReadyResult) {
	results = make([]ReadyResult, len(r.Checks))
	var wg sync.WaitGroup
	for i, c := range r.Checks {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			res := ReadyResult{Name: c.Module, Module: c.Module, Backend: c.Backend, OK: true}
			if c.Name != "" {
				res.Name += "/" + c.Name
			}
			if err := c.Check(cctx); err != nil {
				res.OK, res.Error = false, err.Error()
			}
			results[i] = res
		})
	}
	wg.Wait()
	for _, p := range routing.Observe() {
		for i := range results {
			if results[i].Module == p.Module && results[i].Backend == p.Backend && r.Checks[i].Name != ReadyVersion {
				results[i].Routed = &RoutedState{Clients: p.Pools, SlotsUsed: p.Clients, MaxClients: p.MaxClients, Tenants: p.Tenants, Retired: p.Retired}
			}
		}
	}
	slices.SortFunc(results, func(a, b ReadyResult) int { return strings.Compare(a.Name, b.Name) })
	ready = true
	for _, res := range results {
		ready = ready && res.OK
	}
	return ready, results
}
