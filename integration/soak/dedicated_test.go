package soak_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
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
		postgres.Routed(p.resolver(app), postgres.RoutedConfig{MaxClients: dedMaxClients, MaxConnsPerClient: dedPerClient}),
		postgres.ConnBudget(dedConns),
		postgres.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[Body](dedDocs, postgres.DocumentConfig{Read: postgres.Table(dedDocs), Write: postgres.Table(dedDocs)}),
		postgres.OutboxRoute(dedOutbox, postgres.OutboxConfig{Table: postgres.Table(dedOutbox)}),
	}, extra...)...)
}

// createDedicatedDatabases creates each tenant's database on its server,
// both servers at once, in the background (it is the slow part of the
// soak's start, and needs no app). The returned function waits for it;
// it is also waited for before the servers stop.
func createDedicatedDatabases(t *testing.T, p placement, servers []*privatePG, tenants []tenancy.ID) func() error {
	done := make(chan error, 1)
	go func() {
		done <- perServer(p, servers, tenants, func(s int, id tenancy.ID) error {
			return servers[s].exec("postgres", "CREATE DATABASE "+dedDatabase(id))
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

// checkDedicated reads the dedicated leg: through the adapter as each
// tenant (whose pool must reach its own server), then raw, database by
// database on each server: every tenant database must be on the server
// its placement names, and hold only its tenant's rows.
func checkDedicated(ctx context.Context, d appDeps, p placement, servers []*privatePG, sent map[tenancy.ID]int, tenants []tenancy.ID, add func(*tally) *tally) error {
	t := add(&tally{sink: fmt.Sprintf("pg-dedicated-docs(%d servers, as each tenant)", len(servers))})
	for _, id := range tenants {
		bound := tenancy.WithTenant(ctx, id)
		pool, release, err := d.DedClient.Pool(bound)
		if err != nil {
			return fmt.Errorf("dedicated: %w", err)
		}
		var port, db string
		err = pool.QueryRow(bound, "SELECT inet_server_port()::text, current_database()").Scan(&port, &db)
		release()
		if err != nil {
			return fmt.Errorf("dedicated: %w", err)
		}
		if s, _ := p.server(id); port != p.ports[s] || db != dedDatabase(id) {
			return fmt.Errorf("dedicated: tenant %s reaches %s on port %s, placed in %s on port %s", id, db, port, dedDatabase(id), p.ports[s])
		}
		recs, err := d.Ded.List(bound, document.Query{})
		if err != nil {
			return fmt.Errorf("dedicated: %w", err)
		}
		seen, cross := map[string]int{}, 0
		for _, r := range recs {
			if r.ID != "doc-"+strconv.Itoa(r.Value.Seq) || file("doc", id, r.Value, seen) {
				cross++
			}
		}
		t.tenant(id, keys("doc", sent[id]), seen, cross)
	}

	return checkDedicatedRaw(ctx, p, servers, sent, tenants, add)
}

// checkDedicatedRaw reads every tenant database of the run on every
// server as the operator: each must be on the server its placement
// names, once, and hold only its tenant's documents and outbox rows.
func checkDedicatedRaw(ctx context.Context, p placement, servers []*privatePG, sent map[tenancy.ID]int, tenants []tenancy.ID, add func(*tally) *tally) error {
	docs := add(&tally{sink: fmt.Sprintf("pg-dedicated-docs-raw(%d servers, each database)", len(servers))})
	byID := make(map[string]tenancy.ID, len(tenants))
	for _, id := range tenants {
		byID[dedDatabase(id)] = id
	}
	// Where every tenant database of the run is, before reading any.
	type located struct {
		server int
		db     string
		id     tenancy.ID
	}
	var all []located
	found := map[tenancy.ID]int{}
	for s, srv := range servers {
		dbs, err := srv.databases(ctx, dedDBPrefix)
		if err != nil {
			return err
		}
		for _, db := range dbs {
			id, ok := byID[db]
			if !ok {
				return fmt.Errorf("server %d holds %s, the database of no tenant of this run", s+1, db)
			}
			found[id]++
			all = append(all, located{s, db, id})
		}
	}
	for _, id := range tenants {
		if found[id] != 1 {
			return fmt.Errorf("tenant %s: %d databases named %s over the servers, want 1", id, found[id], dedDatabase(id))
		}
	}
	docSeen, docCross := map[tenancy.ID]map[string]int{}, map[tenancy.ID]int{}
	outSeen, outCross := map[tenancy.ID]map[string]int{}, map[tenancy.ID]int{}
	for _, l := range all {
		if placed, _ := p.server(l.id); p.ports[placed] != servers[l.server].port {
			// A tenant's rows on a server its placement does not name:
			// counted against it, whatever they hold.
			docs.note("%s: database %s on the server of port %s, placed on port %s", l.id, l.db, servers[l.server].port, p.ports[placed])
			docCross[l.id]++
			outCross[l.id]++
		}
		if err := servers[l.server].readDedicated(ctx, l.db, l.id, docSeen, docCross, outSeen, outCross); err != nil {
			return err
		}
	}
	// Read with the documents above (one connection per database).
	outbox := add(&tally{sink: fmt.Sprintf("outbox-dedicated(%d servers, each database)", len(servers))})
	for _, id := range tenants {
		docs.tenant(id, keys("doc", sent[id]), docSeen[id], docCross[id])
		outbox.tenant(id, keys(streamDedicated, sent[id]), outSeen[id], outCross[id])
	}
	return nil
}

// databases lists the server's databases whose names start with prefix.
func (p *privatePG) databases(ctx context.Context, prefix string) ([]string, error) {
	conn, err := pgx.Connect(ctx, p.dbURL("postgres", "soak-admin"))
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY 1", prefix)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// readDedicated files the rows of one tenant database, owned by owner:
// documents by the body's tenant and id, delivered outbox rows by their
// tenant column against the body. A row naming anyone but owner is
// cross-tenant.
func (p *privatePG) readDedicated(ctx context.Context, db string, owner tenancy.ID,
	docSeen map[tenancy.ID]map[string]int, docCross map[tenancy.ID]int,
	outSeen map[tenancy.ID]map[string]int, outCross map[tenancy.ID]int) error {
	conn, err := pgx.Connect(ctx, p.dbURL(db, "soak-admin"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if docSeen[owner] == nil {
		docSeen[owner] = map[string]int{}
	}
	rows, err := conn.Query(ctx, "SELECT id, value FROM public."+dedDocs)
	if err != nil {
		return fmt.Errorf("%s: %w", db, err)
	}
	var id string
	var b Body
	_, err = pgx.ForEachRow(rows, []any{&id, &b}, func() error {
		if id != "doc-"+strconv.Itoa(b.Seq) || file("doc", owner, b, docSeen[owner]) {
			docCross[owner]++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", db, err)
	}
	rows, err = conn.Query(ctx, "SELECT tenant_id, payload FROM public."+dedOutbox+" WHERE delivered_at IS NOT NULL")
	if err != nil {
		return fmt.Errorf("%s: %w", db, err)
	}
	byTenant, cross, err := raw(rows, streamDedicated)
	if err != nil {
		return fmt.Errorf("%s: %w", db, err)
	}
	if outSeen[owner] == nil {
		outSeen[owner] = map[string]int{}
	}
	for tid, seen := range byTenant {
		for k, n := range seen {
			if tid != owner {
				outCross[owner] += n // another tenant's row in this tenant's database
				continue
			}
			outSeen[owner][k] += n
		}
	}
	for _, n := range cross {
		outCross[owner] += n
	}
	return nil
}

// dbURL is a single-connection DSN for a database of the server.
func (p *privatePG) dbURL(db, app string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%s/%s?sslmode=disable&application_name=%s", p.port, db, app)
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
