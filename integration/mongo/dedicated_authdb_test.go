package mongo_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRoutedAuthDatabaseDoesNotCount: the URI's path is the database a
// login authenticates against, not the one a routed client writes to
// (Params["database"] or the module's). A tenant whose Params database is
// another tenant's is refused whatever auth database its URI names, and a
// tenant whose URI path names another tenant's database but whose Params
// name its own is served there, apart.
func TestRoutedAuthDatabaseDoesNotCount(t *testing.T) {
	db := freshName()
	u, err := url.Parse(uriA)
	if err != nil {
		t.Fatal(err)
	}
	withPath := func(path string) string {
		v := *u
		v.Path = "/" + path
		return v.String()
	}
	tenantC := tenancy.MustParseID("a0de0000-0000-4000-8000-00000000000c")
	docs := routedDocs(t, db, map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: uriA, Params: map[string]string{"database": db + "_a"}},
		// A's database as Params, another auth database in the path.
		tenancytest.TenantB: {Endpoint: withPath("admin"), Params: map[string]string{"database": db + "_a"}},
		// A's database as the auth database, its own as Params.
		tenantC: {Endpoint: withPath(db + "_a"), Params: map[string]string{"database": db + "_c"}},
	})
	ctxA, ctxB, ctxC := ctxOf(tenancytest.TenantA), ctxOf(tenancytest.TenantB), ctxOf(tenantC)
	if _, err := docs.Create(ctxA, "p1", item{"a", 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := docs.Get(ctxB, "p1"); tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
		t.Fatalf("B on A's database under another auth database: %v", err)
	}
	if _, err := docs.Get(ctxC, "p1"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("C, whose auth database is A's, reading A's document: %v", err)
	}
	if _, err := docs.Create(ctxC, "p1", item{"c", 3}); err != nil {
		t.Fatal(err)
	}
	if got, err := docs.Get(ctxA, "p1"); err != nil || got.Value.Name != "a" {
		t.Fatalf("A's document after C's write: %+v, %v", got, err)
	}
}
