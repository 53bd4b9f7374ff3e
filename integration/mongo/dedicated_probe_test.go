package mongo_test

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRoutedRacingSpellingsOneWinner: a tenant for each spelling of one
// database (host forms, URI options, the database named by Params), all making
// their first call at once, five rounds: exactly one is served, and the
// database holds only that tenant's document. Every client writes or
// reads the identity document at the same moment. (The database's name
// in another case is not a spelling on FerretDB's SQLite backend, which
// keeps "TW1" and "tw1" as two databases; MongoDB refuses the second.)
func TestRoutedRacingSpellingsOneWinner(t *testing.T) {
	u, err := url.Parse(uriA)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	spelled := func(host, query string) string {
		v := *u
		v.Host = host
		if query != "" {
			if v.RawQuery != "" {
				v.RawQuery += "&"
			}
			v.RawQuery += query
		}
		return v.String()
	}
	for round := range 5 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			db := freshName()
			spellings := []routing.Credentials{
				{Endpoint: uriA},
				{Endpoint: spelled("localhost:"+port, "")},
				{Endpoint: spelled("LOCALHOST:"+port, "appName=x")},
				{Endpoint: spelled("[::ffff:127.0.0.1]:"+port, "")},
				{Endpoint: spelled("127.0.0.1:"+port, "connectTimeoutMS=5000")},
				{Endpoint: strings.Replace(uriA, "127.0.0.1", "%31%32%37.0.0.1", 1)},
				{Endpoint: uriA, Params: map[string]string{"database": db}},
			}
			creds := map[tenancy.ID]routing.Credentials{}
			for i, c := range spellings {
				creds[tenancy.MustParseID(fmt.Sprintf("7ace0000-0000-4000-8000-%012x", i+1))] = c
			}
			docs := routedDocs(t, db, creds)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var won []tenancy.ID
			for id := range creds {
				wg.Go(func() {
					_, err := docs.Create(ctxOf(id), "r", item{Name: id.String()})
					switch {
					case err == nil:
						mu.Lock()
						won = append(won, id)
						mu.Unlock()
					case tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared:
						t.Logf("tenant %s (%+v): %v", id, creds[id], err)
					}
				})
			}
			wg.Wait()
			if len(won) != 1 {
				t.Fatalf("%d tenants served on one database: %v", len(won), won)
			}
			if n, err := docs.Count(ctxOf(won[0]), document.Query{}); err != nil || n != 1 {
				t.Fatalf("the winner's database holds %d documents, %v", n, err)
			}
		})
	}
}

// TestRoutedUnicodeDatabaseNames: database names that differ by Unicode
// normalisation (NFC and NFD of "café") or by non-ASCII case are refused
// as one target or, when served, are two databases: what A writes, B
// does not find. FerretDB (SQLite) refuses such names; a real MongoDB
// (MONGODB_URI) runs it.
func TestRoutedUnicodeDatabaseNames(t *testing.T) {
	base := freshName()
	for name, pair := range map[string][2]string{
		"normalisation": {norm.NFC.String(base + "café"), norm.NFD.String(base + "café")},
		"case":          {base + "ÉTÉ", base + "été"},
		"sharp s":       {base + "straße", base + "strasse"},
	} {
		t.Run(name, func(t *testing.T) {
			creds := map[tenancy.ID]routing.Credentials{
				tenancytest.TenantA: {Endpoint: uriA, Params: map[string]string{"database": pair[0]}},
				tenancytest.TenantB: {Endpoint: uriA, Params: map[string]string{"database": pair[1]}},
			}
			docs := routedDocs(t, base, creds)
			if _, err := docs.Create(ctxOf(tenancytest.TenantA), "a1", item{Name: "secret"}); err != nil {
				if strings.Contains(err.Error(), "InvalidNamespace") {
					t.Skipf("the server refuses the name %q: %v", pair[0], err) // FerretDB's SQLite backend
				}
				t.Fatal(err)
			}
			n, err := docs.Count(ctxOf(tenancytest.TenantB), document.Query{})
			switch {
			case tenancy.CodeOf(err) == tenancy.CodeDedicatedTargetShared:
				t.Logf("%q and %q: refused as one target", pair[0], pair[1])
			case err != nil:
				t.Logf("%q and %q: B failed: %v", pair[0], pair[1], err)
			case n != 0:
				t.Fatalf("B on %q counts %d of A's documents on %q", pair[1], n, pair[0])
			default:
				t.Logf("%q and %q: two databases", pair[0], pair[1])
			}
		})
	}
}
