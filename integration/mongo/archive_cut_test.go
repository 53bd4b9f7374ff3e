package mongo_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestArchiveImportCutMongo, on FerretDB: an import of A's documents
// (past one InsertMany of 500, in a per-tenant collection and a tagged
// shared one) into C cut on both sides of each batch's end, then
// recovered as documented (offboard, provision, rerun), leaves C with
// exactly A's documents, none lost and none twice.
func TestArchiveImportCutMongo(t *testing.T) {
	var runner *migrate.Runner
	r := archiveMongoApp(t, fx.Invoke(fx.Annotate(func(m *migrate.Runner) { runner = m }, fx.ParamTags(`name:"m"`))))
	a, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	writeMongo(t, r, a)
	ctx := tenancy.WithTenant(context.Background(), a)
	for i := range 510 {
		if _, err := r.Orders.Create(ctx, fmt.Sprint("o", i), order{Total: i}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Tenants.Provision(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.Tenants.Export(context.Background(), a, &buf); err != nil {
		t.Fatal(err)
	}
	// 511 orders, then 2 items.
	left := tenancytest.CheckImportCut(t, tenancytest.ImportCut{Tenants: r.Tenants, Import: runner.Import, Module: "m", Target: c, Archive: buf.Bytes(),
		At: []int{0, 1, 499, 500, 501, 510, 511, 512}})
	if left == 0 {
		t.Errorf("no cut left a document behind: the import inserts 500 at a time, so the cuts missed its writes")
	}
	t.Logf("%d of 8 cuts left documents behind; each converged on the rerun", left)
}
