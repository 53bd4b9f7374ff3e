package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// TestProvisionObjectsFailsClosed: the plan reads every object the
// module's statements create, and a creating statement it cannot read
// fails the plan rather than being left out of it.
func TestProvisionObjectsFailsClosed(t *testing.T) {
	objs, err := provisionObjects([]string{
		`CREATE SCHEMA IF NOT EXISTS "s"`,
		`CREATE TABLE IF NOT EXISTS "s"."t" (id text)`,
		`CREATE TABLE IF NOT EXISTS "s"."t" (id text)`,
		`CREATE INDEX IF NOT EXISTS "i" ON "s"."t" USING gin (tsv)`,
		`DO $$ BEGIN CREATE ROLE "s_ro" NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
		`GRANT USAGE ON SCHEMA "s" TO "s_ro"`,
		`ALTER ROLE "s_ro" NOINHERIT NOCREATEDB NOCREATEROLE NOLOGIN CONNECTION LIMIT 0`,
	})
	var got []string
	for _, o := range objs {
		got = append(got, o.String())
	}
	if want := []string{"schema s", "table s.t", "index s.i", "role s_ro"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("objects %q, %v; want %q", got, err, want)
	}
	for _, s := range []string{
		`CREATE VIEW "s"."v" AS SELECT 1`,
		`CREATE TABLE IF NOT EXISTS s.t (id text)`,
		`CREATE INDEX IF NOT EXISTS "i" ON t (x)`,
		`DO $$ BEGIN CREATE EXTENSION x; END $$`,
	} {
		if _, err := provisionObjects([]string{s}); err == nil || !strings.Contains(err.Error(), "cannot plan") {
			t.Errorf("%s: %v, want a refusal", s, err)
		}
	}
}

// TestPlanProvisionRefusesTheZeroTenant: the zero tenant has no
// containers to plan; it is refused before any connection.
func TestPlanProvisionRefusesTheZeroTenant(t *testing.T) {
	_, err := lifecycleTarget{&Client{module: "m"}}.PlanProvision(context.Background(), tenancy.ID{})
	if tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("zero tenant: %v", err)
	}
}
