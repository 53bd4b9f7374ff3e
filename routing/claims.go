package routing

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"

	"github.com/tenantwire/tenantwire/tenancy"
)

// A claim binds one data target (where a tenant's data lives: a database,
// a cluster) to the one tenant allowed to use it through a routed client.
// A tenant holds a claim on every place its credentials name (each host of
// a host list, normalised) and, once its client has asked the server, on
// the identity the server reports: two spellings of one target agree there
// even when no string rule sees it. Claims are process-wide, so two
// modules cannot put two tenants in one target either, and keyed by a
// hash, so an entry has a fixed size whatever the target string.
type claimKey [sha256.Size]byte

// Kinds of claim: a name read from the credentials, or the server's word.
const (
	claimNamed  = "named"
	claimServer = "server"
)

func claimKeyOf(backend, kind, target string) claimKey {
	h := sha256.New()
	write(h, backend)
	write(h, kind)
	write(h, target)
	var k claimKey
	h.Sum(k[:0])
	return k
}

// claimSet is what one tenant claims in one Pools: its named targets,
// sorted, and its server identity once known.
type claimSet struct {
	named  []claimKey
	server claimKey
	// hasServer is false until the tenant's client has been identified.
	hasServer bool
	// labels are the readable forms of named, and serverLabel of server,
	// for refusals.
	labels      []string
	serverLabel string
}

func (s claimSet) keys() []claimKey {
	if !s.hasServer {
		return s.named
	}
	return append(slices.Clip(s.named), s.server)
}

func (s claimSet) equal(o claimSet) bool {
	return s.hasServer == o.hasServer && s.server == o.server && slices.Equal(s.named, o.named)
}

// label is the readable form of k within s.
func (s claimSet) label(k claimKey) string {
	if s.hasServer && k == s.server {
		return s.serverLabel
	}
	if i := slices.Index(s.named, k); i >= 0 {
		return s.labels[i]
	}
	return ""
}

type claim struct {
	tenant tenancy.ID
	// holders counts the Pools in which tenant holds this claim, and the
	// tenant's clients there not closed yet.
	holders int
}

// registry is process-wide. Looks (claimsFree) share its lock; takes and
// drops hold it alone, and a take checks again under it, so a look that
// raced a take only decides whether a client is opened, never a binding.
var registry = struct {
	mu sync.RWMutex
	m  map[claimKey]*claim
}{m: make(map[claimKey]*claim)}

// conflictLocked returns the first of keys another tenant holds, and that
// tenant (registry.mu held).
func conflictLocked(keys []claimKey, tenant tenancy.ID) (claimKey, tenancy.ID, bool) {
	for _, k := range keys {
		if c := registry.m[k]; c != nil && c.tenant != tenant {
			return k, c.tenant, true
		}
	}
	return claimKey{}, tenancy.ID{}, false
}

// claimsFree reports the first of keys another tenant holds.
func claimsFree(keys []claimKey, tenant tenancy.ID) (claimKey, tenancy.ID, bool) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	return conflictLocked(keys, tenant)
}

// takeClaims records tenant on every key and releases old (the tenant's
// previous claims in the same Pools) in one step, or takes nothing and
// reports the key another tenant holds.
func takeClaims(keys []claimKey, tenant tenancy.ID, old []claimKey) (claimKey, tenancy.ID, bool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if k, holder, clash := conflictLocked(keys, tenant); clash {
		return k, holder, true
	}
	addHoldersLocked(keys, tenant)
	for _, k := range old {
		dropClaimLocked(k)
	}
	return claimKey{}, tenancy.ID{}, false
}

// holdClaims adds a holder to keys, which tenant holds already.
func holdClaims(keys []claimKey, tenant tenancy.ID) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	addHoldersLocked(keys, tenant)
}

// addHoldersLocked counts one more holder of each key for tenant
// (registry.mu held; no other tenant holds any of them).
func addHoldersLocked(keys []claimKey, tenant tenancy.ID) {
	for _, k := range keys {
		c := registry.m[k]
		if c == nil {
			c = &claim{tenant: tenant}
			registry.m[k] = c
		}
		c.holders++
	}
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

// namedClaims makes a claimSet of a credential set's targets.
func (p *Pools[C]) namedClaims(targets []string) (claimSet, error) {
	if len(targets) == 0 {
		return claimSet{}, fmt.Errorf("the credentials name no %s", p.noun())
	}
	targets = slices.Compact(slices.Sorted(slices.Values(targets)))
	s := claimSet{labels: targets, named: make([]claimKey, len(targets))}
	for i, t := range targets {
		s.named[i] = claimKeyOf(p.cfg.Backend, claimNamed, t)
	}
	return s, nil
}

// withServer is s with the identity the server reported for pl.
func (s claimSet) withServer(pl serverIdentity) claimSet {
	if pl.known {
		s.server, s.serverLabel, s.hasServer = pl.key, pl.label, true
	}
	return s
}

// serverIdentity is what a client's server said it is.
type serverIdentity struct {
	key   claimKey
	label string
	known bool
}

// claimLook reports, without taking anything, whether tenant may use the
// targets of s (mu held).
func (p *Pools[C]) claimLook(tenant tenancy.ID, s claimSet) error {
	// What p.held records for tenant is in the registry under tenant until
	// p drops it (under mu), so those keys need no look. A tenant whose
	// client retired looks again with the same names and no server yet.
	if old, had := p.held[tenant]; had && (old.equal(s) || !s.hasServer && slices.Equal(old.named, s.named)) {
		return nil
	}
	if k, holder, clash := claimsFree(s.keys(), tenant); clash {
		return p.sharedTarget(tenant, holder, s, k)
	}
	return nil
}

// claimFor takes tenant's claims s in p (mu held): a no-op when it holds
// them already, a move when its targets changed.
func (p *Pools[C]) claimFor(tenant tenancy.ID, s claimSet) error {
	old, had := p.held[tenant]
	if had && old.equal(s) {
		return nil
	}
	var prev []claimKey
	if had {
		prev = old.keys()
	}
	if k, holder, clash := takeClaims(s.keys(), tenant, prev); clash {
		return p.sharedTarget(tenant, holder, s, k)
	}
	p.held[tenant] = s
	return nil
}

func (p *Pools[C]) noun() string {
	if p.cfg.TargetNoun == "" {
		return "data target"
	}
	return p.cfg.TargetNoun
}

// sharedTarget is the refusal of a tenant whose data target another tenant
// already uses: the route is rated dedicated, so sharing it would be a
// claim the data does not have.
func (p *Pools[C]) sharedTarget(tenant, holder tenancy.ID, s claimSet, k claimKey) error {
	noun := p.noun()
	var detail string
	if s.hasServer && k == s.server {
		detail = fmt.Sprintf("the routed client is rated dedicated, but tenant %s resolves to %s %q, which its server reports as %s, "+
			"the %s tenant %s of this process already uses; nothing was read or written", tenant, noun, s.labels, s.serverLabel, noun, holder)
	} else {
		detail = fmt.Sprintf("the routed client is rated dedicated, but tenant %s resolves to %s %q, "+
			"which tenant %s of this process already uses; nothing was read or written", tenant, noun, s.label(k), holder)
	}
	return &tenancy.Error{
		Code: tenancy.CodeDedicatedTargetShared, Module: p.cfg.Module, Backend: p.cfg.Backend,
		Detail: detail,
		Fix: fmt.Sprintf("make the credential resolver give each tenant its own %s, "+
			"or lower the floor and use the namespace or tagged tier on a plain client", noun),
	}
}
