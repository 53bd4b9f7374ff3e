package mongo_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type cart struct {
	Items int `json:"items"`
}

// Each backend's declaration of the same tenant-aware document route and
// its injection, written the same way: they differ only in the package
// qualifier and the container field (Read on memory and PostgreSQL,
// Collection on MongoDB). Each is injected by its route's name and, the
// only route of its type, unnamed, and both are the one route.
type (
	memCarts struct {
		fx.In
		Named   *memory.Documents[cart] `name:"carts"`
		Unnamed *memory.Documents[cart]
	}
	pgCarts struct {
		fx.In
		Named   *postgres.Documents[cart] `name:"carts"`
		Unnamed *postgres.Documents[cart]
		Client  *postgres.Client `name:"pg"`
	}
	mongoCarts struct {
		fx.In
		Named   *mongo.Documents[cart] `name:"carts"`
		Unnamed *mongo.Documents[cart]
	}
)

// TestPortDocumentsInjectTheSameOnMemoryPostgresAndMongo: the one
// declaration above runs on all three backends, and the route each
// injects serves the same calls alike through document.Store: A's cart
// is A's, B sees none of it.
func TestPortDocumentsInjectTheSameOnMemoryPostgresAndMongo(t *testing.T) {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	table := "carts_" + hex.EncodeToString(suffix)

	var m memCarts
	start(t, memory.Module("m", memory.Document[cart]("carts", memory.DocumentConfig{TenantAware: true, Read: naming.Shared(table)})), fx.Populate(&m))
	var p pgCarts
	start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)),
		postgres.Document[cart]("carts", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(table)})), fx.Populate(&p))
	for _, id := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
		if err := p.Client.Provision(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = p.Named.Delete(ctxOf(tenancytest.TenantA), "c1")
	})
	var g mongoCarts
	start(t, mongo.Module("mg", append(plain(t),
		mongo.Document[cart]("carts", mongo.DocumentConfig{TenantAware: true, Collection: naming.Shared(table)}))...), fx.Populate(&g))

	for name, c := range map[string]struct{ named, unnamed document.Store[cart] }{
		"memory":   {m.Named, m.Unnamed},
		"postgres": {p.Named, p.Unnamed},
		"mongo":    {g.Named, g.Unnamed},
	} {
		t.Run(name, func(t *testing.T) {
			if c.named != c.unnamed {
				t.Fatal("the named and the unnamed injection are two routes")
			}
			a, b := ctxOf(tenancytest.TenantA), ctxOf(tenancytest.TenantB)
			if _, err := c.named.Create(a, "c1", cart{Items: 2}); err != nil {
				t.Fatal(err)
			}
			if r, err := c.unnamed.Get(a, "c1"); err != nil || r.Value.Items != 2 {
				t.Fatalf("A's cart: %+v %v", r, err)
			}
			if _, err := c.named.Get(b, "c1"); !errors.Is(err, document.ErrNotFound) {
				t.Fatalf("B's read of A's cart: %v, want not found", err)
			}
			if _, err := c.named.Get(context.Background(), "c1"); !errors.Is(err, tenancy.CodeTenantUnbound) {
				t.Fatalf("unbound read: %v, want tenant_unbound", err)
			}
		})
	}
}
