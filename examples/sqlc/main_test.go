package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

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
		"acme   report launch 1/2 done",
		"acme   report hiring 0/1 done",
		"globex report audit  0/1 done",
		"globex task collect logs project audit  done=false",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "globex task write copy") || strings.Contains(got, "acme   task collect logs") {
		t.Errorf("a tenant listed the other's tasks:\n%s", got)
	}
}

// TestBoundary: the generated queries, on the SQL route at namespace,
// keep each tenant's projects and tasks from the other.
func TestBoundary(t *testing.T) {
	testsvc.PostgresURL(t)
	ctx := context.Background()
	a, err := start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, tn := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
			if err := a.client.Teardown(ctx, tn); err != nil {
				t.Error(err)
			}
		}
		if err := a.stop(); err != nil {
			t.Error(err)
		}
	})
	for _, tn := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
		if err := a.client.Provision(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	names := func(ctx context.Context) ([]string, error) {
		rows, err := a.q.ProjectReport(ctx)
		var out []string
		for _, r := range rows {
			out = append(out, r.Name)
		}
		return out, err
	}
	tenancytest.Boundary(t, tenancytest.Probe{
		Write: func(ctx context.Context) error {
			p, err := a.q.CreateProject(ctx, "probe")
			if err == nil {
				_, err = a.q.AddTask(ctx, tasksParams(p.ID))
			}
			return err
		},
		Read: func(ctx context.Context) (bool, error) {
			n, err := names(ctx)
			return slices.Contains(n, "probe"), err
		},
		Count: func(ctx context.Context) (int, error) {
			l, err := a.q.ListTasks(ctx)
			return len(l), err
		},
	})
}

func tasksParams(project int64) tasks.AddTaskParams {
	return tasks.AddTaskParams{ProjectID: project, Title: "probe task"}
}
