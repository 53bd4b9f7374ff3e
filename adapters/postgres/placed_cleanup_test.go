package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestCleanupMoveKeepsTheNewCopy: after a move between every pair of
// placements, removing the old copy leaves the tenant's records where it
// now is, all of them, and its counter too.
func TestCleanupMoveKeepsTheNewCopy(t *testing.T) {
	p := newPlacedApp(t)
	a := tenancytest.TenantA
	ctxA := tenancy.WithTenant(context.Background(), a)
	for i := range 5 {
		if _, err := p.docs.Create(ctxA, fmt.Sprint("r", i), item{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.hits.Add(ctxA, "h", 3); err != nil {
		t.Fatal(err)
	}
	at := tenancy.Tagged
	for _, to := range []tenancy.Tier{tenancy.Namespace, tenancy.Dedicated, tenancy.Tagged, tenancy.Dedicated, tenancy.Namespace, tenancy.Tagged} {
		if _, err := p.tenants.Move(context.Background(), a, "orders", to, modules.MoveOptions{}); err != nil {
			t.Fatalf("moving %s → %s: %v", at, to, err)
		}
		if _, err := p.tenants.CleanupMove(context.Background(), a, "orders", at); err != nil {
			t.Fatalf("cleaning up %s after the move to %s: %v", at, to, err)
		}
		if n, err := p.docs.Count(ctxA, document.Query{}); err != nil || n != 5 {
			t.Fatalf("after %s → %s and the cleanup of %s, A holds %d records (%v), want 5", at, to, at, n, err)
		}
		if v, err := p.hits.Get(ctxA, "h"); err != nil || v != 3 {
			t.Fatalf("after %s → %s and the cleanup of %s, A's counter is %d (%v), want 3", at, to, at, v, err)
		}
		at = to
	}
}

// TestArchiveOfTwoModulesOfOnePrefix: a tagged module and a namespace
// module of the same schema prefix: the tenant's schema is the namespace
// module's only, so its archive lists the schema's table once, a round
// trip into C fills both modules, and offboarding the tagged module alone
// leaves the schema.
func TestArchiveOfTwoModulesOfOnePrefix(t *testing.T) {
	run := unique()
	prefix := "tw" + run + "_"
	var tn *modules.Tenants
	var tags, ns *postgres.Documents[item]
	var tagsRunner *migrate.Runner
	app, _ := build(t,
		postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
			postgres.Document[item]("ns", postgres.DocumentConfig{Read: naming.PerTenant("nsdocs")})),
		postgres.Module("tags", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix), modules.AllowTeardown(), postgres.NamedOnly(),
			postgres.Document[item]("tags", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("tdocs_" + run)})),
		modules.Lifecycle(), fx.Populate(&tn), named("ns", &ns), named("tags", &tags), named("tags", &tagsRunner))
	startApp(t, app)
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	for _, id := range []tenancy.ID{a, b, c} {
		if _, err := tn.Provision(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []tenancy.ID{a, b} {
		ctx := tenancy.WithTenant(context.Background(), id)
		for _, r := range []*postgres.Documents[item]{ns, tags} {
			if _, err := r.Create(ctx, "x", item{Name: id.Hex()[:4]}); err != nil {
				t.Fatal(err)
			}
		}
	}
	archive := tenancytest.CheckRoundTrip(t, tenancytest.RoundTrip{Tenants: tn, A: a, B: b, C: c})
	if n := bytes.Count(archive, []byte(`"family":"nsdocs","kind"`)); n != 1 {
		t.Errorf("the archive holds the schema's record %d times, want once:\n%s", n, archive)
	}
	if err := tagsRunner.Teardown(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Get(tenancy.WithTenant(context.Background(), a), "x"); err != nil {
		t.Errorf("A's namespace record after the tagged module's teardown: %v", err)
	}
}

// TestOffboardErasesAnOldCopy: a tenant moved tagged → namespace →
// dedicated with no cleanup holds a copy at each placement; offboarding
// it erases every copy, each placement's verifier reporting what it
// checked, and a tenant that never moved is offboarded at its own
// placement only.
func TestOffboardErasesAnOldCopy(t *testing.T) {
	p := newPlacedApp(t)
	a, b := tenancytest.TenantA, tenancytest.TenantB
	ctxA := tenancy.WithTenant(context.Background(), a)
	for i := range 5 {
		if _, err := p.docs.Create(ctxA, fmt.Sprint("r", i), item{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	for _, to := range []tenancy.Tier{tenancy.Namespace, tenancy.Dedicated} {
		if _, err := p.tenants.Move(context.Background(), a, "orders", to, modules.MoveOptions{}); err != nil {
			t.Fatalf("moving to %s: %v", to, err)
		}
	}
	if got := p.tenants.Placement(a).Copies["orders"]; len(got) != 2 {
		t.Fatalf("A's record lists the old copies %v, want tagged and namespace", got)
	}
	rep, err := p.tenants.Offboard(context.Background(), a)
	if err != nil {
		t.Fatalf("offboarding A: %v (%+v)", err, rep)
	}
	db := superuser(t)
	requireRows(t, db, "SELECT count(*) FROM public."+p.table+" WHERE tenant_id = '"+a.String()+"'", 0)
	requireRows(t, db, "SELECT count(*) FROM pg_namespace WHERE nspname = '"+postgres.SchemaName(p.prefix, a)+"'", 0)
	ran := 0
	for _, line := range rep {
		if line.Skipped == "" && len(line.Checked) > 0 {
			ran++
		}
	}
	if ran != 3 {
		t.Errorf("the offboard of A ran and verified %d placements, want all three: %+v", ran, rep)
	}
	if got := p.tenants.Placement(a).Copies["orders"]; len(got) != 0 {
		t.Errorf("A's record still lists old copies %v after its offboard", got)
	}
	rep, err = p.tenants.Offboard(context.Background(), b)
	if err != nil {
		t.Fatalf("offboarding B: %v", err)
	}
	skipped := 0
	for _, line := range rep {
		if line.Skipped != "" {
			skipped++
		}
	}
	if skipped != 2 {
		t.Errorf("the offboard of B (never moved) skipped %d placements, want the two it is not at: %+v", skipped, rep)
	}
}
