package migrate_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// A migration set is read from an fs.FS (usually an embed.FS); the history
// check tells what a container still needs, and refuses an edited file.
func ExampleSet_Pending() {
	set, err := migrate.Load(fstest.MapFS{
		"0001_add_total.sql":   {Data: []byte("ALTER TABLE orders ADD COLUMN total numeric;")},
		"0002_total_index.sql": {Data: []byte("CREATE INDEX orders_total ON orders (total);")},
	}, "sql")
	if err != nil {
		panic(err)
	}
	tenant := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	applied := []migrate.Applied{{Version: 1, Name: "add_total", Checksum: set[0].Checksum}}
	pending, _ := set.Pending(applied, "orders", "postgres", tenant)
	for _, st := range pending {
		fmt.Println("pending:", st.File())
	}
	applied[0].Checksum = "something else"
	_, err = set.Pending(applied, "orders", "postgres", tenant)
	fmt.Println(tenancy.CodeOf(err))
	// Output:
	// pending: 0002_total_index.sql
	// migration_history_conflict
}

// Each runs a per-tenant function over many tenants with bounded
// concurrency; a tenant's failure does not stop the others.
func ExampleEach() {
	reg := migrate.NewMemoryRegistry()
	ctx := context.Background()
	for _, s := range []string{"7c9e6679-7425-40de-944b-e07fc1f90ae7", "3f2504e0-4f89-41d3-9a0c-0305e82c3301"} {
		_ = reg.Put(ctx, tenancy.MustParseID(s), migrate.Ready)
	}
	// The same tenant set feeds sharded workers: postgres.Relay(route,
	// postgres.RelayConfig{Tenants: migrate.TenantsOf(reg), ...}).
	tenants, _ := migrate.TenantsOf(reg)(ctx)
	rep := migrate.Each(ctx, "provision", tenants, migrate.Options{Concurrency: 2}, func(ctx context.Context, t tenancy.ID, _ *migrate.Recorder) error {
		if t.String()[0] == '3' {
			return fmt.Errorf("no room")
		}
		return nil
	})
	fmt.Println(rep.Done, "done;", len(rep.Failures), "failed:", rep.Failures[0].Tenant, rep.Failures[0].Err)
	// Output: 1 done; 1 failed: 3f2504e0-4f89-41d3-9a0c-0305e82c3301 no room
}
