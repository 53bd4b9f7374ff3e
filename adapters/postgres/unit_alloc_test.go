package postgres_test

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// unitAllocs is what InTx allocates itself, beyond the transaction's BEGIN
// and COMMIT: the unit, its transaction view and the context carrying it.
const unitAllocs = 3

// TestInTxWithoutTelemetryAllocatesOnlyTheUnit: in an app that gives no
// telemetry, InTx costs its transaction and the unit's own three
// allocations, nothing for the span it would be with a TracerProvider.
func TestInTxWithoutTelemetryAllocatesOnlyTheUnit(t *testing.T) {
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("ua_" + unique())})))
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	pool, release, err := c.Pool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	bare := func() {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	unit := func() {
		if err := c.InTx(ctx, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	bare() // the pool's first connection
	// The least of a few runs: a pool's background work allocates now and
	// then, never less.
	least := func(f func()) float64 {
		m := testing.AllocsPerRun(200, f)
		for range 4 {
			m = min(m, testing.AllocsPerRun(200, f))
		}
		return m
	}
	base, got := least(bare), least(unit)
	if got > base+unitAllocs {
		t.Fatalf("InTx allocates %v times without telemetry, a bare transaction %v: want at most %d more", got, base, unitAllocs)
	}
}
