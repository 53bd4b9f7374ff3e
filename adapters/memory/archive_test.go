package memory_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// archiveTenants writes two documents and a cache entry under a and one
// document under b.
func archiveTenants(t *testing.T, r offboardRoutes, a, b tenancy.ID) {
	t.Helper()
	ca, cb := tenancy.WithTenant(context.Background(), a), tenancy.WithTenant(context.Background(), b)
	for _, id := range []string{"o1", "o2"} {
		if _, err := r.Docs.Create(ca, id, order{Item: "anvil-" + id, Qty: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Docs.Update(ca, "o1", order{Item: "anvil", Qty: 3}, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Cache.Set(ca, "k", []byte{0, 1, 0xff}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Stream.Append(ca, []byte("e")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Docs.Create(cb, "o1", order{Item: "b's"}); err != nil {
		t.Fatal(err)
	}
}

// TestArchiveRoundTrip: A's tagged documents (with their versions) and
// its per-tenant cache entry (bytes with no JSON form, and its TTL)
// come back under C; B's are untouched, and the stream is listed as
// skipped.
func TestArchiveRoundTrip(t *testing.T) {
	r := offboardApp(t)
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	archiveTenants(t, r, a, b)
	archive := tenancytest.CheckRoundTrip(t, tenancytest.RoundTrip{Tenants: r.Tenants, A: a, B: b, C: c,
		Read: func(ctx context.Context) (any, error) {
			o1, err := r.Docs.Get(ctx, "o1")
			if err != nil {
				return nil, err
			}
			v, ok, err := r.Cache.Get(ctx, "k")
			return []any{o1.Value, o1.Version, v, ok}, err
		}})
	if !bytes.Contains(archive, []byte(`"reason":"stream messages are not exported`)) {
		t.Errorf("the stream is not listed as skipped:\n%s", archive)
	}
	if rec, err := r.Docs.Get(tenancy.WithTenant(context.Background(), c), "o1"); err != nil || rec.Version != 2 {
		t.Errorf("C's o1: %+v %v, want version 2", rec, err)
	}
}

// TestArchiveRefused: a truncated archive, an altered one, one imported
// into a tenant that holds data, and one edited (its manifest resealed)
// to name another tenant's container are refused, and nothing is
// written.
func TestArchiveRefused(t *testing.T) {
	r := offboardApp(t)
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	archiveTenants(t, r, a, b)
	var buf bytes.Buffer
	if err := r.Tenants.Export(context.Background(), a, &buf); err != nil {
		t.Fatal(err)
	}
	archive := buf.Bytes()
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, tenancytest.Truncated(archive), tenancy.CodeArchiveInvalid)
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, archive[:len(archive)-1], tenancy.CodeArchiveInvalid)
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, tenancytest.Altered(archive, "anvil", "anvim"), tenancy.CodeArchiveMismatch)
	tenancytest.CheckArchiveRefused(t, r.Tenants, b, archive, tenancy.CodeArchiveTargetNotEmpty)
	// An edited record naming B's own container, resealed: refused, so
	// nothing lands outside C.
	edited := tenancytest.Reseal(t, tenancytest.Altered(tenancytest.Altered(archive, `"route":"carts"`, `"route":"carts.`+b.Hex()+`"`), `"scope":"own"`, `"scope":"tagged"`))
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, edited, tenancy.CodeArchiveMismatch)
	if !strings.Contains(string(edited), "carts."+b.Hex()) {
		t.Fatal("the edit did not take")
	}
	// A rerun of the whole archive after the refusals succeeds.
	if err := r.Tenants.Import(context.Background(), c, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
}

// TestArchiveRefusesAnotherApp: an archive of an app whose module has
// another name is refused.
func TestArchiveRefusesAnotherApp(t *testing.T) {
	r := offboardApp(t)
	a := tenancytest.FreshTenant(t)
	archiveTenants(t, r, a, tenancytest.FreshTenant(t))
	var buf bytes.Buffer
	if err := r.Tenants.Export(context.Background(), a, &buf); err != nil {
		t.Fatal(err)
	}
	other := offboardApp(t, modules.AllowTeardown())
	tenancytest.CheckArchiveRefused(t, other.Tenants, tenancytest.FreshTenant(t),
		tenancytest.Reseal(t, bytes.ReplaceAll(buf.Bytes(), []byte(`"module":"shop"`), []byte(`"module":"store"`))), tenancy.CodeArchiveMismatch)
}
