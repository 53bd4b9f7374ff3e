// Package service is a small tenant-aware service against the real
// tenantwire packages: each planted mistake ends in a MISTAKE marker
// naming the check that must find it; every other line must stay clean.
package service

import (
	"context"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/capability"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/tenancy"
)

type Order struct{ Total int }

type Service struct {
	ctx    context.Context
	DB     *postgres.Client
	Hits   *postgres.Counter
	Orders *postgres.Documents[Order]
	Report *postgres.DynamicRead
	Graph  *neo4j.RawCypher
	Search capability.Search
}

var pool *pgxpool.Pool

func Options() []postgres.Option { return []postgres.Option{postgres.Use(pool)} }

func (s *Service) Get(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if _, err := s.Orders.Get(ctx, r.PathValue("id")); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	s.Hits.Add(context.Background(), "reads", 1) // MISTAKE lostctx
	go func() {
		s.Hits.Add(context.WithoutCancel(ctx), "reads.async", 1)
	}()
	go func() {
		s.Search.Put(context.Background(), "o", "text") // MISTAKE gonotenant
	}()
}

func (s *Service) Stored(id string) error {
	_, err := s.Orders.Get(s.ctx, id) // MISTAKE lostctx
	return err
}

func (s *Service) Fanout(ctx context.Context, ids []string) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, id := range ids {
		g.Go(func() error { _, err := s.Orders.Get(gctx, id); return err })
		g.Go(func() error { _, err := s.Orders.Get(context.TODO(), id); return err }) // MISTAKE gonotenant
	}
	return g.Wait()
}

func (s *Service) Impersonate(w http.ResponseWriter, r *http.Request) {
	id, err := tenancy.ParseID(r.Header.Get("X-Tenant"))
	if err != nil {
		return
	}
	ctx := tenancy.WithTenant(r.Context(), id) // MISTAKE rebind
	s.Hits.Add(ctx, "impersonations", 1)
}

func (s *Service) Totals(ctx context.Context, scan func(pgx.Rows) error) error {
	id, _ := tenancy.FromContext(ctx)
	if err := s.Report.Query(ctx, "SELECT sum(total) FROM orders WHERE status = $1", []any{"paid"}, scan); err != nil {
		return err
	}
	return s.Report.Query(ctx, "SELECT sum(total) FROM orders WHERE tenant = '"+id.String()+"'", nil, scan) // MISTAKE tenantsql
}

func (s *Service) Friends(ctx context.Context, id tenancy.ID) error {
	_, err := s.Graph.Read(ctx, fmt.Sprintf("MATCH (n {tenant: '%s'})-[:KNOWS]->(m) RETURN m", id), nil) // MISTAKE tenantsql
	return err
}

func (s *Service) Purge(ctx context.Context) error {
	_, err := pool.Exec(ctx, "DELETE FROM orders") // MISTAKE bypass
	return err
}

func (s *Service) Place(ctx context.Context, id string, o Order) error {
	return s.DB.InTx(ctx, func(tx context.Context) error {
		if _, err := s.Orders.Create(tx, id, o); err != nil {
			return err
		}
		_, err := s.Hits.Add(ctx, "orders", 1) // MISTAKE intxctx
		return err
	})
}

// Through document.Store, as code written for any backend calls it.
func Count(ctx context.Context, st document.Store[Order]) (int, error) {
	count := st.Count
	return count(context.Background(), document.Query{}) // MISTAKE lostctx
}

// A helper that passes its context on to a route loses the tenant as the
// route would.
func (s *Service) audit(ctx context.Context, what string) { _, _ = s.Hits.Add(ctx, what, 1) }

func (s *Service) Nightly() { s.audit(context.Background(), "nightly") } // MISTAKE lostctx
