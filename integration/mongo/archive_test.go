package mongo_test

import (
	"bytes"
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type archiveMongo struct {
	fx.In
	Tenants *modules.Tenants
	Orders  *mongo.Documents[order]
	Items   *mongo.Documents[item]
}

func archiveMongoApp(t *testing.T, more ...fx.Option) archiveMongo {
	t.Helper()
	opts, db := plainDB(t)
	raw := client(t, uriA).Database(db)
	t.Cleanup(func() { _ = raw.Drop(context.Background()) })
	var r archiveMongo
	start(t, modules.Lifecycle(), mongo.Module("m", append(opts, modules.AllowTeardown(),
		mongo.Document[order]("orders", mongo.RouteConfig{Collection: naming.PerTenant("orders")}),
		mongo.Document[item]("items", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")}))...),
		fx.Populate(&r), fx.Options(more...))
	return r
}

// read is what CheckRoundTrip compares: writeMongo's order and one item.
func (r archiveMongo) read(ctx context.Context) (any, error) {
	o, err := r.Orders.Get(ctx, "o")
	if err != nil {
		return nil, err
	}
	y, err := r.Items.Get(ctx, "y")
	return []any{o.Value, o.Version, y.Value, y.Version}, err
}

func writeMongo(t *testing.T, r archiveMongo, ids ...tenancy.ID) {
	t.Helper()
	for _, id := range ids {
		if _, err := r.Tenants.Provision(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		ctx := tenancy.WithTenant(context.Background(), id)
		if _, err := r.Orders.Create(ctx, "o", order{Total: 7}); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"x", "y"} {
			if _, err := r.Items.Create(ctx, n, item{Name: n, N: 3}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestArchiveRoundTripMongo, on FerretDB: A's per-tenant collection and
// its documents of the tagged shared one (ids prefixed with the tenant)
// come back under C in the same database; B is untouched and no document
// of C's names A.
func TestArchiveRoundTripMongo(t *testing.T) {
	r := archiveMongoApp(t)
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	writeMongo(t, r, a, b)
	if _, err := r.Tenants.Provision(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	tenancytest.CheckRoundTrip(t, tenancytest.RoundTrip{Tenants: r.Tenants, A: a, B: b, C: c,
		Read: r.read})
}

// TestArchiveRefusedMongo: a truncated or altered archive, one into a
// tenant holding documents and one naming a route the module does not
// have are refused with nothing written.
func TestArchiveRefusedMongo(t *testing.T) {
	r := archiveMongoApp(t)
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	writeMongo(t, r, a, b)
	if _, err := r.Tenants.Provision(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.Tenants.Export(context.Background(), a, &buf); err != nil {
		t.Fatal(err)
	}
	archive := buf.Bytes()
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, tenancytest.Truncated(archive), tenancy.CodeArchiveInvalid)
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, tenancytest.Altered(archive, `"route":"items"`, `"route":"orders"`), tenancy.CodeArchiveMismatch)
	tenancytest.CheckArchiveRefused(t, r.Tenants, b, archive, tenancy.CodeArchiveTargetNotEmpty)
	// The last record, after the orders were sent: refused before any.
	last := `"route":"items","family":"documents","kind":"document","value":{"_id":"y"`
	if !bytes.Contains(archive, []byte(last)) {
		t.Fatalf("no %s in\n%s", last, archive)
	}
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, tenancytest.Reseal(t, tenancytest.Altered(archive, last, `"route":"nope","family":"documents","kind":"document","value":{"_id":"y"`)), tenancy.CodeArchiveMismatch)
}
