package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/examples/sqlc/tasks"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func TestRun(t *testing.T) {
	testsvc.PostgresURL(t) // skips loudly (fails under CI) without PostgreSQL
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"acme    report launch  1/2 done",
		"acme    report hiring  0/1 done",
		"globex  report audit   0/1 done",
		"globex  task collect logs    project audit   done=false",
		"initech report reports 1/2 done",
		"initech task add cover sheet project reports done=false",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, leak := range []string{"globex  task write copy", "acme    task collect logs", "initech task ship", "acme    report reports"} {
		if strings.Contains(got, leak) {
			t.Errorf("a tenant listed another's tasks (%q):\n%s", leak, got)
		}
	}
}

// TestBoundary: the generated queries keep each tenant's projects and
// tasks from the other, on the SQL route at namespace (two schemas of one
// database) and at dedicated (two databases of their own).
func TestBoundary(t *testing.T) {
	testsvc.PostgresURL(t)
	ctx := context.Background()
	both := []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB}
	a, err := start(ctx, both...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range []shop{a.namespace, a.dedicated} {
			for _, tn := range both {
				if err := s.client.Teardown(ctx, tn); err != nil {
					t.Error(err)
				}
			}
		}
		if err := a.stop(); err != nil {
			t.Error(err)
		}
	})
	for name, s := range map[string]shop{"namespace": a.namespace, "dedicated": a.dedicated} {
		t.Run(name, func(t *testing.T) {
			for _, tn := range both {
				if err := s.client.Provision(ctx, tn); err != nil {
					t.Fatal(err)
				}
			}
			tenancytest.Boundary(t, probe(s.q))
			if db := database(t, s.client, tenancytest.TenantA); name == "dedicated" && db == database(t, a.namespace.client, tenancytest.TenantA) {
				t.Errorf("the dedicated tenant runs in the namespace module's database %s", db)
			}
		})
	}
}

// database is the database c runs tenant's statements in.
func database(t *testing.T, c *postgres.Client, tenant tenancy.ID) string {
	ctx := tenancy.WithTenant(context.Background(), tenant)
	pool, release, err := c.Pool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var db string
	if err := pool.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	return db
}

// probe is the boundary probe of the generated queries.
func probe(q *tasks.Queries) tenancytest.Probe {
	names := func(ctx context.Context) ([]string, error) {
		rows, err := q.ProjectReport(ctx)
		var out []string
		for _, r := range rows {
			out = append(out, r.Name)
		}
		return out, err
	}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error {
			p, err := q.CreateProject(ctx, "probe")
			if err == nil {
				_, err = q.AddTask(ctx, tasksParams(p.ID))
			}
			return err
		},
		Read: func(ctx context.Context) (bool, error) {
			n, err := names(ctx)
			return slices.Contains(n, "probe"), err
		},
		Count: func(ctx context.Context) (int, error) {
			l, err := q.ListTasks(ctx)
			return len(l), err
		},
	}
}

func tasksParams(project int64) tasks.AddTaskParams {
	return tasks.AddTaskParams{ProjectID: project, Title: "probe task"}
}
