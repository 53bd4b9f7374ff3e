package routing

import (
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/tenantwire/tenantwire/tenancy"
)

// A claim binds one data target (where a tenant's data lives: a database,
// a cluster) to the one tenant allowed to use it through a routed client.
// Claims are process-wide, so two modules cannot put two tenants in one
// target either, and keyed by a hash of backend and target, so an entry
// has a fixed size whatever the target string.
type claimKey [sha256.Size]byte

func claimKeyOf(backend, target string) claimKey {
	h := sha256.New()
	write(h, backend)
	write(h, target)
	var k claimKey
	h.Sum(k[:0])
	return k
}

type claim struct {
	tenant tenancy.ID
	// holders counts the Pools in which tenant holds this claim.
	holders int
}

var registry = struct {
	mu sync.Mutex
	m  map[claimKey]*claim
}{m: make(map[claimKey]*claim)}

// claimFree reports whether tenant may use the target k: nobody holds it,
// or tenant does.
func claimFree(k claimKey, tenant tenancy.ID) bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	c := registry.m[k]
	return c == nil || c.tenant == tenant
}

// takeClaim records tenant on k and releases old (the tenant's previous
// target in the same Pools) in one step, or fails when another tenant
// holds k.
func takeClaim(k claimKey, tenant tenancy.ID, old *claimKey) bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	c := registry.m[k]
	if c != nil && c.tenant != tenant {
		return false
	}
	if c == nil {
		c = &claim{tenant: tenant}
		registry.m[k] = c
	}
	c.holders++
	if old != nil {
		dropClaimLocked(*old)
	}
	return true
}

func dropClaims(keys []claimKey) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for _, k := range keys {
		dropClaimLocked(k)
	}
}

func dropClaimLocked(k claimKey) {
	if c := registry.m[k]; c != nil {
		if c.holders--; c.holders <= 0 {
			delete(registry.m, k)
		}
	}
}

// claimLook reports, without taking it, whether tenant may use target
// (mu held).
func (p *Pools[C]) claimLook(tenant tenancy.ID, k claimKey, target string) error {
	if old, had := p.held[tenant]; (had && old == k) || claimFree(k, tenant) {
		return nil
	}
	return p.sharedTarget(tenant, target)
}

// claimFor takes tenant's claim on target in p (mu held): a no-op when it
// holds it already, a move when its target changed.
func (p *Pools[C]) claimFor(tenant tenancy.ID, k claimKey, target string) error {
	old, had := p.held[tenant]
	if had && old == k {
		return nil
	}
	var prev *claimKey
	if had {
		prev = &old
	}
	if !takeClaim(k, tenant, prev) {
		return p.sharedTarget(tenant, target)
	}
	p.held[tenant] = k
	return nil
}

// sharedTarget is the refusal of a tenant whose data target another tenant
// already uses: the route is rated dedicated, so sharing it would be a
// claim the data does not have.
func (p *Pools[C]) sharedTarget(tenant tenancy.ID, target string) error {
	noun := p.cfg.TargetNoun
	if noun == "" {
		noun = "data target"
	}
	return &tenancy.Error{
		Code: tenancy.CodeDedicatedTargetShared, Module: p.cfg.Module, Backend: p.cfg.Backend,
		Detail: fmt.Sprintf("the routed client is rated dedicated, but tenant %s resolves to %s %q, "+
			"which another tenant of this process already uses; nothing was read or written", tenant, noun, target),
		Fix: fmt.Sprintf("make the credential resolver give each tenant its own %s, "+
			"or lower the floor and use the namespace or tagged tier on a plain client", noun),
	}
}
