package neo4j_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestServerSpellingsOfOneDatabase: tenant A on the first server's
// default database, and tenants naming it otherwise: another host name,
// the IPv4-mapped address, the database by its name "neo4j" or in upper
// case. Every one is refused before it reads or writes; the spellings no
// name rule can see ("" against "neo4j") by the id the server reports. A
// tenant on the second server is served.
func TestServerSpellingsOfOneDatabase(t *testing.T) {
	s1, s2 := testsvc.Neo4j(t), testsvc.Neo4jSecond(t)
	u, err := url.Parse(s1.URI)
	if err != nil {
		t.Fatal(err)
	}
	host, port := u.Hostname(), u.Port()
	if host != "127.0.0.1" {
		t.Skipf("the spellings below are of 127.0.0.1; the first server is %s", s1.URI)
	}
	at := func(h, db string) routing.Credentials {
		c := credentials(s1)
		v := *u
		v.Host = h + ":" + port
		c.Endpoint = v.String()
		if db != "" {
			c.Params = map[string]string{"database": db}
		}
		return c
	}
	spellings := map[string]routing.Credentials{
		"localhost, named neo4j": at("localhost", "neo4j"),
		"named NEO4J":            at(host, "NEO4J"),
		"neo4j:// scheme":        {Endpoint: "neo4j://localhost:" + port, User: s1.User, Secret: s1.Password},
		"ipv4-mapped":            at("[::ffff:127.0.0.1]", ""),
	}
	creds := map[tenancy.ID]routing.Credentials{tenancytest.TenantA: credentials(s1), tenancytest.TenantB: credentials(s2)}
	tenantOf := map[string]tenancy.ID{}
	i := 0
	for k, c := range spellings {
		i++
		id := tenancy.MustParseID(fmt.Sprintf("5e11e000-0000-4000-8000-%012x", i))
		creds[id], tenantOf[k] = c, id
	}
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		if c, ok := creds[id]; ok {
			return c, nil
		}
		return routing.Credentials{}, fmt.Errorf("unknown tenant %s", id)
	}
	g := graph(t, "g", neo4j.Routed(resolve, routing.Limits{MaxClients: 8}), neo4j.GraphRoute("g", neo4j.RouteConfig{}))
	label := uniqueLabel(t)
	d1, d2 := directTo(t, s1), directTo(t, s2)
	t.Cleanup(func() { d1.removeLabel(label); d2.removeLabel(label) })
	for _, ctx := range []context.Context{srvA, srvB} {
		if _, err := g.CreateNode(ctx, []string{label}, map[string]any{"k": "secret"}); err != nil {
			t.Fatal(err)
		}
	}
	byServer := 0
	for k, id := range tenantOf {
		ctx := tenancy.WithTenant(context.Background(), id)
		_, err := g.CountNodes(ctx, []string{label}, nil)
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared {
			t.Errorf("spelling %q (%+v) of A's database: %v", k, creds[id], err)
			continue
		}
		if strings.Contains(te.Detail, "its server reports") {
			byServer++
		}
		if _, err := g.CreateNode(ctx, []string{label}, nil); tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
			t.Errorf("spelling %q wrote: %v", k, err)
		}
	}
	if byServer < 2 {
		t.Errorf("%d spellings were refused by the server's word, want at least 2 (a name rule cannot tell \"\" from neo4j)", byServer)
	}
	if n := d1.query("MATCH (n:`"+label+"`) RETURN count(n)", nil)[0].Values[0]; n != int64(1) {
		t.Fatalf("the first server holds %v nodes, want only A's", n)
	}
}
