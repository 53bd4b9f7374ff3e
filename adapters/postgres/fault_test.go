package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestBackendsTerminated: every backend of
// the module is terminated mid-use; calls fail with an error (no panic),
// the module recovers on its own, and acknowledged writes survive.
func TestBackendsTerminated(t *testing.T) {
	run := unique()
	app := "tw_fault_" + run
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)+"&pool_max_conns=4&application_name="+app),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("fault_" + run), Write: naming.Shared("fault_" + run)})), &d)
	provision(t, c, tenancytest.TenantA)
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if _, err := d.Create(ctx, "before", item{N: 1}); err != nil {
		t.Fatal(err)
	}
	conn := superuser(t)
	var killed int
	if err := conn.QueryRow(context.Background(),
		"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&killed); err != nil || killed == 0 {
		t.Fatalf("terminated %d backends: %v", killed, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	failures := 0
	for {
		_, err := d.Get(ctx, "before")
		if err == nil {
			break
		}
		failures++
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after %d failures: %v", failures, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("recovered after %d failed call(s)", failures)
	if _, err := d.Create(ctx, "after", item{N: 2}); err != nil {
		t.Fatal(err)
	}
	if r, err := d.Get(ctx, "before"); err != nil || r.Value.N != 1 {
		t.Errorf("acknowledged write lost: %+v %v", r, err)
	}
}
