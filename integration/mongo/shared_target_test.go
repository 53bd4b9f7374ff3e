package mongo_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/connprobe"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func routedDocs(t *testing.T, db string, creds map[tenancy.ID]routing.Credentials, opts ...func(*mongo.RoutedConfig)) *mongo.Documents[item] {
	t.Helper()
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		if c, ok := creds[id]; ok {
			return c, nil
		}
		return routing.Credentials{}, fmt.Errorf("unknown tenant %s", id)
	}
	var rc mongo.RoutedConfig
	for _, o := range opts {
		o(&rc)
	}
	var docs *mongo.Documents[item]
	start(t, mongo.Module("m", mongo.Database(db), mongo.Routed(resolve, rc), modules.RequiredIsolation(tenancy.Dedicated),
		mongo.Document[item]("items", mongo.RouteConfig{Collection: naming.Shared("items")})), fx.Populate(&docs))
	return docs
}

// TestRoutedSharedDatabaseRefused: tenant B resolving to tenant A's server
// and database (with other URI options) is refused on every call: it
// neither reads nor writes A's documents.
func TestRoutedSharedDatabaseRefused(t *testing.T) {
	db := freshName()
	sep := "?"
	if u, _ := url.Parse(uriA); u.RawQuery != "" {
		sep = "&"
	}
	docs := routedDocs(t, db, map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: uriA},
		tenancytest.TenantB: {Endpoint: uriA + sep + "appName=other"},
	})
	ctxA, ctxB := ctxOf(tenancytest.TenantA), ctxOf(tenancytest.TenantB)
	if _, err := docs.Create(ctxA, "p1", item{"secret", 1}); err != nil {
		t.Fatal(err)
	}
	refused := func(op string, err error) {
		t.Helper()
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared || te.Module != "m" || te.Backend != "mongodb" || te.Route != "items" {
			t.Fatalf("B's %s on A's database: %v", op, err)
		}
	}
	_, err := docs.Get(ctxB, "p1")
	refused("get", err)
	_, err = docs.Count(ctxB, document.Query{})
	refused("count", err)
	refused("delete", docs.Delete(ctxB, "p1"))
	_, err = docs.Create(ctxB, "p2", item{"b", 2})
	refused("create", err)
	if n, err := docs.Count(ctxA, document.Query{}); err != nil || n != 1 {
		t.Fatalf("A's documents after B's attempts: %d, %v", n, err)
	}
}

// TestRoutedDatabasesOnOneServer: tenants on one server that differ only
// in the database name are separate: what A writes, B does not find.
func TestRoutedDatabasesOnOneServer(t *testing.T) {
	db := freshName()
	docs := routedDocs(t, db, map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: uriA, Params: map[string]string{"database": db + "_a"}},
		tenancytest.TenantB: {Endpoint: uriA, Params: map[string]string{"database": db + "_b"}},
	})
	ctxA, ctxB := ctxOf(tenancytest.TenantA), ctxOf(tenancytest.TenantB)
	if _, err := docs.Create(ctxA, "p1", item{"a", 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := docs.Get(ctxB, "p1"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("B reading A's document: %v", err)
	}
	if err := docs.Delete(ctxB, "p1"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("B deleting A's document: %v", err)
	}
	if _, err := docs.Get(ctxA, "p1"); err != nil {
		t.Fatalf("A lost its document: %v", err)
	}
}

// TestRoutedBudgetIsAHardLimit: MaxClients 2 with a pool of one holds
// twelve tenants calling at once to two pooled connections, counted from
// the driver's pool events. A proxy in front of the server also counts
// the driver's monitoring connections, which no pool setting bounds: it
// shows at most two clients' worth.
func TestRoutedBudgetIsAHardLimit(t *testing.T) {
	const tenants = 12
	u, err := url.Parse(uriA)
	if err != nil {
		t.Fatal(err)
	}
	// Every connection the clients dial, monitoring included, counted on
	// the client side: a proxy would see a close only when its own
	// goroutine next reads, which on a loaded machine can lag a retired
	// client's close past the next client's dial.
	conns := &connprobe.Counter{}
	db := freshName()
	creds := map[tenancy.ID]routing.Credentials{}
	ids := make([]tenancy.ID, tenants)
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+100))
		creds[ids[i]] = routing.Credentials{Endpoint: u.String(), Params: map[string]string{"database": fmt.Sprintf("%s_%d", db, i)}}
	}
	var open, peak atomic.Int64
	monitor := &event.PoolMonitor{Event: func(e *event.PoolEvent) {
		switch e.Type {
		case event.ConnectionCreated:
			n := open.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
		case event.ConnectionClosed:
			open.Add(-1)
		}
	}}
	docs := routedDocs(t, db, creds, func(rc *mongo.RoutedConfig) {
		rc.MaxClients, rc.MaxConnsPerClient, rc.MaxWait = 2, 1, time.Minute
		rc.ClientOptions = func(o *options.ClientOptions) { o.SetPoolMonitor(monitor).SetDirect(true).SetDialer(conns) }
	})
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			ctx := ctxOf(id)
			for j := range 3 {
				key := fmt.Sprint("k", j)
				if _, err := docs.Create(ctx, key, item{"n", i}); err != nil {
					t.Error(err)
					return
				}
				if r, err := docs.Get(ctx, key); err != nil || r.Value.N != i {
					t.Errorf("get: %+v, %v", r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("peak connections: %d pooled, %d dialed (monitoring included)", peak.Load(), conns.Peak())
	if p := peak.Load(); p > 2 || p == 0 {
		t.Errorf("peak %d pooled connections for a budget of 2", p)
	}
	if p := conns.Peak(); p > 2*3 {
		t.Errorf("peak %d server connections for two clients", p)
	}
}

// TestRoutedSpellingsOfOneDatabase: tenant A's server and database named
// by another host name, an IPv4-mapped or percent-encoded address, or the
// database in other case, is A's database all the same: the name rules
// catch some spellings, the identity the database holds catches
// localhost, and each tenant is refused before it reads or writes. A
// tenant on the second server is served.
func TestRoutedSpellingsOfOneDatabase(t *testing.T) {
	db := freshName()
	u, err := url.Parse(uriA)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	spelled := func(host string) string {
		v := *u
		v.Host = host
		return v.String()
	}
	spellings := map[string]routing.Credentials{
		"localhost":       {Endpoint: spelled("localhost:" + port)},
		"ipv4-mapped":     {Endpoint: spelled("[::ffff:127.0.0.1]:" + port)},
		"percent-encoded": {Endpoint: strings.Replace(uriA, "127.0.0.1", "%31%32%37.0.0.1", 1)},
		"database case":   {Endpoint: uriA, Params: map[string]string{"database": strings.ToUpper(db)}},
	}
	creds := map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: uriA},
		tenancytest.TenantB: {Endpoint: uriB},
	}
	tenantOf := map[string]tenancy.ID{}
	i := 0
	for k, c := range spellings {
		i++
		id := tenancy.MustParseID(fmt.Sprintf("5e11e000-0000-4000-8000-%012x", i))
		creds[id], tenantOf[k] = c, id
	}
	docs := routedDocs(t, db, creds)
	for _, id := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
		if _, err := docs.Create(ctxOf(id), "p1", item{"secret", 1}); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	for k, id := range tenantOf {
		_, err := docs.Get(ctxOf(id), "p1")
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared {
			t.Errorf("spelling %q (%+v) of A's database: %v", k, creds[id], err)
			continue
		}
		if k == "localhost" && !strings.Contains(te.Detail, "its server reports") {
			t.Errorf("localhost was refused by name, not by the database's identity: %s", te.Detail)
		}
		if _, err := docs.Create(ctxOf(id), "b-"+k, item{}); tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
			t.Errorf("spelling %q wrote: %v", k, err)
		}
	}
	if n, err := docs.Count(ctxOf(tenancytest.TenantA), document.Query{}); err != nil || n != 1 {
		t.Fatalf("A's documents: %d, %v", n, err)
	}
}
