package soak_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// The dedicated leg: a routed module whose resolver places every tenant
// in a database of its own, half of them on the first private server and
// half on the second. Each request writes doc-<seq> there and an outbox
// row evt-<seq>; a sharded relay in the relay process drains every
// tenant's outbox, on both servers, into the pipeline's third stream.
const (
	dedModule   = "soakded"
	dedDocs     = "ded_docs"
	dedOutbox   = "ded_outbox"
	dedDBPrefix = "soak_ded_"

	// One pool per tenant (MaxClients at least the tenant count, so no
	// pool is retired under the load) of one connection: a tenant's
	// requests come one at a time, from the one worker that owns it.
	dedMaxClients = 50
	dedPerClient  = 1
	dedConns      = dedMaxClients * dedPerClient // per process, over both servers

	appDedName   = "soak-ded-app"
	relayDedName = "soak-ded-relay"
)

// placement is the dedicated leg's placement table: tenant i of the run
// lives on server i%2, in database soak_ded_<tenant hex>. Both processes
// build it from the same tenant list and ports.
type placement struct {
	ports []string // the servers, by index
	index map[tenancy.ID]int
}

func newPlacement(ports []string, tenants []tenancy.ID) placement {
	p := placement{ports: ports, index: make(map[tenancy.ID]int, len(tenants))}
	for i, id := range tenants {
		p.index[id] = i
	}
	return p
}

// server is the index of the tenant's server; false for a tenant the
// table does not hold.
func (p placement) server(id tenancy.ID) (int, bool) {
	i, ok := p.index[id]
	return i % len(p.ports), ok
}

func dedDatabase(id tenancy.ID) string { return dedDBPrefix + id.Hex() }

// resolver is the routed module's resolver: the tenant's server and
// database under the process's application name (which the connection
// sampler groups by). A tenant outside the table fails: no fallback.
func (p placement) resolver(app string) routing.Resolver {
	return func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		s, ok := p.server(id)
		if !ok {
			return routing.Credentials{}, fmt.Errorf("soak: tenant %s has no placement", id)
		}
		return routing.Credentials{Endpoint: fmt.Sprintf("postgres://postgres@127.0.0.1:%s/%s?sslmode=disable&application_name=%s",
			p.ports[s], dedDatabase(id), app)}, nil
	}
}

// dedOptions is the routed module, the same in both processes (the app
// writes documents and outbox rows, the relay process drains them).
func dedOptions(p placement, app string, extra ...postgres.Option) fx.Option {
	return postgres.Module(dedModule, append([]postgres.Option{
		postgres.Routed(p.resolver(app), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: dedMaxClients, MaxConnsPerClient: dedPerClient}}),
		modules.ConnBudget(dedConns),
		modules.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[Body](dedDocs, postgres.DocumentConfig{Read: naming.Shared(dedDocs), Write: naming.Shared(dedDocs)}),
		postgres.OutboxRoute(dedOutbox, postgres.OutboxConfig{Table: naming.Shared(dedOutbox)}),
	}, extra...)...)
}

// createDedicatedDatabases creates each tenant's database on its server,
// both servers at once, in the background (it is the slow part of the
// soak's start, and needs no app). The returned function waits for it;
// it is also waited for before the servers stop.
func createDedicatedDatabases(t *testing.T, p placement, servers []*privatePG, tenants []tenancy.ID) func() error {
	// The private clusters are copies of one initdb, so they report one
	// system identifier, and the dedicated tier, which trusts what the
	// server reports, would take two tenants' databases of one oid on two
	// clusters for one database. Each tenant's database gets an oid of
	// its own.
	oid := map[tenancy.ID]int{}
	for i, id := range tenants {
		oid[id] = 100000 + i
	}
	done := make(chan error, 1)
	go func() {
		done <- perServer(p, servers, tenants, func(s int, id tenancy.ID) error {
			return servers[s].exec("postgres", fmt.Sprintf("CREATE DATABASE %s OID = %d", dedDatabase(id), oid[id]))
		})
	}()
	wait := sync.OnceValue(func() error { return <-done })
	t.Cleanup(func() { _ = wait() })
	return wait
}

// provisionDedicated creates each tenant's tables through the module, in
// the database its resolver names.
func provisionDedicated(ctx context.Context, c *postgres.Client, p placement, servers []*privatePG, tenants []tenancy.ID) error {
	return perServer(p, servers, tenants, func(_ int, id tenancy.ID) error { return c.Provision(ctx, id) })
}

// perServer runs f for each tenant, the tenants of each server in turn
// and the servers at once.
func perServer(p placement, servers []*privatePG, tenants []tenancy.ID, f func(server int, id tenancy.ID) error) error {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for s := range servers {
		wg.Go(func() {
			for _, id := range tenants {
				if i, _ := p.server(id); i != s {
					continue
				}
				if err := f(s, id); err != nil {
					errs[s] = fmt.Errorf("server %d, tenant %s: %w", s+1, id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// terminateBackends ends every server session of the app and the relay
// process on every server, as an operator's pg_terminate_backend or a
// failover would.
func terminateBackends(servers []*privatePG) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var parts []string
	for s, srv := range servers {
		conn, err := pgx.Connect(ctx, srv.dbURL("postgres", "soak-fault"))
		if err != nil {
			return "", err
		}
		rows, err := conn.Query(ctx, `SELECT application_name, count(*) FILTER (WHERE pg_terminate_backend(pid))
			FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND application_name = ANY($1) GROUP BY 1`,
			[]string{"soak-app", "soak-relay", appDedName, relayDedName})
		n := map[string]int{}
		if err == nil {
			var app string
			var c int
			_, err = pgx.ForEachRow(rows, []any{&app, &c}, func() error { n[app] = c; return nil })
		}
		conn.Close(ctx)
		if err != nil {
			return "", err
		}
		part := fmt.Sprintf("server %d: %d dedicated app and %d dedicated relay sessions", s+1, n[appDedName], n[relayDedName])
		if s == 0 {
			part = fmt.Sprintf("server 1: %d app, %d relay, %d dedicated app and %d dedicated relay sessions",
				n["soak-app"], n["soak-relay"], n[appDedName], n[relayDedName])
		}
		parts = append(parts, part)
	}
	return "pg_terminate_backend on " + strings.Join(parts, "; "), nil
}
