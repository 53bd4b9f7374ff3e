package mongo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestMoveCostMongo (make bench): a tenant of TENANTWIRE_MOVE_RECORDS
// documents (10,000 by default: FerretDB's SQLite backend writes about a
// thousand a second here) moved tagged → namespace → dedicated → tagged,
// each old copy cleaned up; it prints each move's time, its write fence
// and the cleanup's.
func TestMoveCostMongo(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	r, _, _ := placedMongoApp(t)
	tenancytest.CheckMoveCost(t, tenancytest.MoveCost{MoveAround: tenancytest.MoveAround{Tenants: r.Tenants, Tenant: tenancytest.TenantA, Module: "orders"},
		Backend: "mongo", Records: tenancytest.MoveRecords(t, 10_000), Writers: 8,
		Write: func(ctx context.Context, i int) error {
			_, err := r.Orders.Create(ctx, fmt.Sprint("o-", i), order{Total: i})
			return err
		}})
}
