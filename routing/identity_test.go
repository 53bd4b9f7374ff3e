package routing_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// identified is a harness whose server reports Params["server"] as its
// identity: two spellings (two db names here) can name one server target.
func identified(t *testing.T, identifyErr error) (*harness, *atomic.Int64) {
	t.Helper()
	var asked atomic.Int64
	h := newHarnessWith(t, 4, func(c *routing.Config[*client]) {
		c.Identify = func(_ context.Context, cl *client) (string, error) {
			asked.Add(1)
			if identifyErr != nil {
				return "", identifyErr
			}
			return cl.creds.Params["server"], nil
		}
	})
	return h, &asked
}

func (h *harness) setServer(id tenancy.ID, db, server string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.creds[id] = routing.Credentials{Endpoint: h.name, Params: map[string]string{"db": db, "server": server}}
}

// TestServerIdentityDecides: two tenants whose credentials spell one
// target differently (no string rule sees it) are told apart by what the
// server reports: the second is refused, names both tenants, and its
// client is closed unpublished.
func TestServerIdentityDecides(t *testing.T) {
	h, asked := identified(t, nil)
	h.setServer(tenant(1), "shop", "cluster-1/db-7")
	h.setServer(tenant(2), "SHOP-other-spelling", "cluster-1/db-7")
	h.setServer(tenant(3), "shop3", "cluster-1/db-8")
	c1, r := h.acquire(t, tenant(1))
	r()
	_, release, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(2)))
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared || release != nil {
		t.Fatalf("tenant 2 on tenant 1's server database: %v", err)
	}
	if !strings.Contains(te.Detail, tenant(1).String()) || !strings.Contains(te.Detail, tenant(2).String()) || !strings.Contains(te.Detail, "cluster-1/db-7") {
		t.Errorf("refusal does not name both tenants and the identity: %s", te.Detail)
	}
	select {
	case c := <-h.closed:
		if c.creds.Params["db"] != "SHOP-other-spelling" {
			t.Fatalf("closed %v", c.creds)
		}
	case <-h.closeDeadline():
		t.Fatal("the refused tenant's client was never closed")
	}
	// Refused again on every call, and tenant 1 is untouched.
	if _, _, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(2))); tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
		t.Fatalf("second attempt: %v", err)
	}
	if c, r := h.acquire(t, tenant(1)); c != c1 {
		t.Fatal("tenant 1 lost its client")
	} else {
		r()
	}
	_, r = h.acquire(t, tenant(3)) // another server database
	r()
	if n := asked.Load(); n != 4 {
		t.Errorf("the server was asked %d times, want once per client opened (4)", n)
	}
	// The server claim outlives eviction like a named one.
	h.pools.Evict(tenant(1))
	if _, _, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(2))); tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
		t.Fatalf("after eviction: %v", err)
	}
}

// TestServerClaimsAreProcessWide: the server's word holds across Pools.
func TestServerClaimsAreProcessWide(t *testing.T) {
	h1, _ := identified(t, nil)
	h2, _ := identified(t, nil)
	h1.setServer(tenant(1), "a", t.Name())
	h2.setServer(tenant(2), "b", t.Name())
	_, r := h1.acquire(t, tenant(1))
	r()
	if _, _, err := h2.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(2))); tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
		t.Fatalf("tenant 2 through a second Pools: %v", err)
	}
}

// TestIdentifyErrorFailsClosed: a server that cannot say who it is serves
// nobody, and the client opened to ask it is closed.
func TestIdentifyErrorFailsClosed(t *testing.T) {
	h, _ := identified(t, errors.New("permission denied"))
	h.setServer(tenant(1), "a", "x")
	if _, release, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(1))); err == nil || release != nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("err %v", err)
	}
	select {
	case <-h.closed:
	case <-h.closeDeadline():
		t.Fatal("the client was never closed")
	}
	if st := h.pools.Stats(); st.Pools != 0 || st.Claims != 0 || st.Tenants != 0 {
		t.Errorf("stats %+v after a failed identification", st)
	}
	h2, _ := identified(t, nil)
	h2.setServer(tenant(1), "a", "")
	if _, _, err := h2.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(1))); err == nil {
		t.Fatal("an empty identity was accepted")
	}
}

// TestHostListsOverlap: a target named by several hosts claims each, so a
// tenant naming one of them is refused before anything opens.
func TestHostListsOverlap(t *testing.T) {
	h := newHarnessWith(t, 4, func(c *routing.Config[*client]) {
		c.Targets = func(cr routing.Credentials) ([]string, error) {
			var out []string
			for _, host := range strings.Split(cr.Endpoint, ",") {
				out = append(out, host+"/"+cr.Params["db"])
			}
			return out, nil
		}
	})
	h.mu.Lock()
	h.creds[tenant(1)] = routing.Credentials{Endpoint: t.Name() + "h1," + t.Name() + "h2", Params: map[string]string{"db": "d"}}
	h.creds[tenant(2)] = routing.Credentials{Endpoint: t.Name() + "h2", Params: map[string]string{"db": "d"}}
	h.creds[tenant(3)] = routing.Credentials{Endpoint: t.Name() + "h2", Params: map[string]string{"db": "e"}}
	h.mu.Unlock()
	_, r := h.acquire(t, tenant(1))
	r()
	opened := h.opened.Load()
	requireShared(t, h, tenant(2))
	if h.opened.Load() != opened {
		t.Error("a refused tenant opened a client")
	}
	_, r = h.acquire(t, tenant(3))
	r()
}
