package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type item struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

// docProbe is the cross-tenant boundary probe of a document route. B's update and delete
// must fail with document.ErrNotFound precisely, not any error.
func docProbe(t *testing.T, d *postgres.Documents[item]) tenancytest.Probe {
	const id = "probe-1"
	notFound := func(op string, err error) error {
		if err != nil && !errors.Is(err, document.ErrNotFound) {
			t.Errorf("%s under B: %v, want document.ErrNotFound", op, err)
		}
		return err
	}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error {
			_, err := d.Create(ctx, id, item{Name: "probe", N: 1})
			return err
		},
		Read: func(ctx context.Context) (bool, error) {
			_, err := d.Get(ctx, id)
			if errors.Is(err, document.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		},
		Intact: func(ctx context.Context) (bool, error) {
			r, err := d.Get(ctx, id)
			return err == nil && r.Version == 1 && r.Value == item{Name: "probe", N: 1}, err
		},
		RecordID: id,
		List: func(ctx context.Context) ([]string, error) {
			recs, err := d.List(ctx, document.Query{})
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.ID)
			}
			return ids, err
		},
		Count: func(ctx context.Context) (int, error) {
			return d.Count(ctx, document.Query{Filters: []document.Filter{{Field: "name", Op: document.Eq, Value: "probe"}}})
		},
		Update: func(ctx context.Context) error {
			_, err := d.Update(ctx, id, item{Name: "stolen", N: 9}, 1)
			return notFound("update", err)
		},
		Delete: func(ctx context.Context) error { return notFound("delete", d.Delete(ctx, id)) },
	}
}

func TestDocumentBoundaryTagged(t *testing.T) {
	run := unique()
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), modules.RequiredIsolation(tenancy.Tagged),
		postgres.Document[item]("orders", postgres.DocumentConfig{
			TenantAware: true, Read: naming.Shared("docs_" + run), Write: naming.Shared("docs_" + run), History: naming.Shared("hist_" + run),
		})), &d)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	tenancytest.Boundary(t, docProbe(t, d))
	exerciseDocuments(t, d, tenancytest.TenantA)
}

func TestDocumentBoundaryNamespace(t *testing.T) {
	run := unique()
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), modules.RequiredIsolation(tenancy.Namespace),
		postgres.SchemaPrefix("tw"+run+"_"), modules.AllowTeardown(),
		postgres.Document[item]("orders", postgres.DocumentConfig{
			Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs"), History: naming.PerTenant("docs_history"),
		})), &d)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA, tenancytest.TenantB) })
	tenancytest.Boundary(t, docProbe(t, d))
	exerciseDocuments(t, d, tenancytest.TenantA)
	// The schema is the tenant's own: no row carries a tenant column.
	conn := superuser(t)
	var n int
	if err := conn.QueryRow(context.Background(), fmt.Sprintf(`SELECT count(*) FROM %q.docs`, postgres.SchemaName("tw"+run+"_", tenancytest.TenantB))).Scan(&n); err != nil || n != 0 {
		t.Errorf("B's schema holds %d rows (%v)", n, err)
	}
}

// TestDocumentBoundaryDedicated routes A and B to two real databases
// through a routed client.
func TestDocumentBoundaryDedicated(t *testing.T) {
	base := testsvc.PostgresURL(t)
	run := unique()
	conn := superuser(t)
	dsn := map[tenancy.ID]string{}
	for _, tn := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
		db := "tw_ded_" + run + "_" + tn.Hex()[:4]
		exec(t, conn, "CREATE DATABASE "+db)
		t.Cleanup(func() { exec(t, conn, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
		u, _ := url.Parse(base)
		u.Path = "/" + db
		dsn[tn] = u.String()
	}
	resolve := func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
		if d, ok := dsn[tn]; ok {
			return routing.Credentials{Endpoint: d}, nil
		}
		return routing.Credentials{}, fmt.Errorf("unknown tenant %s", tn)
	}
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 2}}),
		modules.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[item]("orders", postgres.DocumentConfig{Read: naming.Shared("docs"), Write: naming.Shared("docs")})), &d)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	tenancytest.Boundary(t, docProbe(t, d))
	exerciseDocuments(t, d, tenancytest.TenantA)
}

// TestDocumentParity runs the same operations with tenancy off and with a
// tagged route under the default tenant: the results must be identical,
// and the tagged column's default is the default tenant.
func TestDocumentParity(t *testing.T) {
	run := unique()
	var off, on *postgres.Documents[item]
	url := testsvc.PostgresURL(t)
	c1 := start(t, postgres.Module("pg", postgres.Connect(url),
		postgres.Document[item]("off", postgres.DocumentConfig{Read: naming.Shared("off_" + run), Write: naming.Shared("off_" + run)})), &off)
	c2 := start(t, postgres.Module("pg", postgres.Connect(url),
		postgres.Document[item]("on", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("on_" + run), Write: naming.Shared("on_" + run)})), &on)
	provision(t, c1, tenancy.Default)
	provision(t, c2, tenancy.Default)
	a := transcript(t, off, context.Background())
	b := transcript(t, on, tenancy.WithTenant(context.Background(), tenancy.Default))
	if !reflect.DeepEqual(a, b) {
		t.Errorf("tenancy off and on differ:\noff %v\non  %v", a, b)
	}
	// A row written without the column (pre-tenancy data) belongs to the default tenant.
	conn := superuser(t)
	exec(t, conn, `INSERT INTO on_`+run+` (id, version, value) VALUES ('legacy', 1, '{"name":"old"}')`)
	if _, err := on.Get(tenancy.WithTenant(context.Background(), tenancy.Default), "legacy"); err != nil {
		t.Errorf("legacy row hidden from the default tenant: %v", err)
	}
}

func transcript(t *testing.T, d *postgres.Documents[item], ctx context.Context) []string {
	var out []string
	note := func(v ...any) { out = append(out, fmt.Sprint(v...)) }
	for i := range 5 {
		v, err := d.Create(ctx, fmt.Sprint("k", i), item{Name: fmt.Sprint("n", i%2), N: i})
		note("create", v, err)
	}
	_, err := d.Create(ctx, "k1", item{})
	note("dup", err)
	v, err := d.Update(ctx, "k2", item{Name: "n0", N: 20}, 1)
	note("update", v, err)
	_, err = d.Update(ctx, "k2", item{}, 1)
	note("stale", err)
	note("delete", d.Delete(ctx, "k3"), d.Delete(ctx, "k3"))
	recs, err := d.List(ctx, document.Query{Filters: []document.Filter{{Field: "name", Op: document.Eq, Value: "n0"}}, OrderBy: "n", Desc: true, Limit: 2})
	note("list", recs, err)
	n, err := d.Count(ctx, document.Query{Filters: []document.Filter{{Field: "n", Op: document.Gte, Value: 1}}})
	note("count", n, err)
	return out
}

// exerciseDocuments checks the store's own semantics under tenant.
func exerciseDocuments(t *testing.T, d *postgres.Documents[item], tenant tenancy.ID) {
	t.Helper()
	ctx := tenancy.WithTenant(context.Background(), tenant)
	for i := range 4 {
		if _, err := d.Create(ctx, fmt.Sprint("e", i), item{Name: "e", N: i}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Create(ctx, "e0", item{}); !errors.Is(err, document.ErrExists) {
		t.Errorf("duplicate create: %v", err)
	}
	v, err := d.Update(ctx, "e1", item{Name: "e", N: 10}, 1)
	if err != nil || v != 2 {
		t.Errorf("update: %v %v", v, err)
	}
	if _, err := d.Update(ctx, "e1", item{}, 1); !errors.Is(err, document.ErrConflict) {
		t.Errorf("stale update: %v", err)
	}
	if _, err := d.Update(ctx, "nope", item{}, 1); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("update of a missing record: %v", err)
	}
	recs, err := d.List(ctx, document.Query{Filters: []document.Filter{{Field: "name", Op: document.Eq, Value: "e"}, {Field: "n", Op: document.Gt, Value: 1}}, OrderBy: "n", Desc: true})
	var ns []int
	for _, r := range recs {
		ns = append(ns, r.Value.N)
	}
	if err != nil || !slices.Equal(ns, []int{10, 3, 2}) {
		t.Errorf("list: %v %v", ns, err)
	}
	if err := d.Delete(ctx, "e2"); err != nil {
		t.Error(err)
	}
	if n, err := d.Count(ctx, document.Query{Filters: []document.Filter{{Field: "name", Op: document.Eq, Value: "e"}}}); err != nil || n != 3 {
		t.Errorf("count: %d %v", n, err)
	}
}

func provision(t *testing.T, c *postgres.Client, tenants ...tenancy.ID) {
	t.Helper()
	for _, tn := range tenants {
		if err := c.Provision(context.Background(), tn); err != nil {
			t.Fatal(err)
		}
	}
}

func teardown(t *testing.T, c *postgres.Client, tenants ...tenancy.ID) {
	for _, tn := range tenants {
		if err := c.Teardown(context.Background(), tn); err != nil {
			t.Error(err)
		}
	}
}
