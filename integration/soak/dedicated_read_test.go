package soak_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/tenancy"
)

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
