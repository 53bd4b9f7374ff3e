package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// sqlLog records the text of every statement a connection prepares and
// every query it runs.
type sqlLog struct {
	mu                sync.Mutex
	prepares, queries []string
}

func (l *sqlLog) TracePrepareStart(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	l.mu.Lock()
	l.prepares = append(l.prepares, d.SQL)
	l.mu.Unlock()
	return ctx
}

func (l *sqlLog) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

func (l *sqlLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	l.queries = append(l.queries, d.SQL)
	l.mu.Unlock()
	return ctx
}

func (l *sqlLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (l *sqlLog) count(list *[]string, substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range *list {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

// TestRoutedIdentityCheckIsOneRoundTrip: every new connection of a routed
// pool asks its server who it is (the claim check) before any statement;
// the question runs once per connection, so it is sent unprepared, in one
// round trip, and leaves nothing in the connection's statement cache. A
// prepared one cost a second round trip on every new connection, which
// a workload churning through more tenants than MaxClients pays per read.
func TestRoutedIdentityCheckIsOneRoundTrip(t *testing.T) {
	_, dsns := databases(t, 1, "")
	log := &sqlLog{}
	resolve := func(context.Context, tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: dsns[0]}, nil
	}
	table := "docs_" + unique()
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 1, MaxConnsPerClient: 1},
		Configure: func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = log }}),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared(table), Write: naming.Shared(table)})), &d)
	provision(t, c, tenancytest.TenantA)
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if _, err := d.Create(ctx, "k", item{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if n := log.count(&log.queries, "pg_control_system"); n < 1 {
		t.Fatalf("the identity check ran %d times: the test does not see it", n)
	}
	if n := log.count(&log.prepares, "pg_control_system"); n != 0 {
		t.Errorf("the identity check was prepared %d times: two round trips per new connection", n)
	}
}
