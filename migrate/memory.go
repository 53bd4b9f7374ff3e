package migrate

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/tenantwire/tenantwire/tenancy"
)

// MemoryRegistry is a Registry held in the process: for tests, and for a
// service that lists its tenants from configuration (Put each at start).
// It is safe for concurrent use.
type MemoryRegistry struct {
	mu sync.Mutex
	m  map[tenancy.ID]*Tenant
}

// NewMemoryRegistry returns an empty registry.
func NewMemoryRegistry() *MemoryRegistry { return &MemoryRegistry{m: map[tenancy.ID]*Tenant{}} }

// Put records tenant in state s.
func (r *MemoryRegistry) Put(_ context.Context, tenant tenancy.ID, s State) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.m[tenant]; ok {
		t.State = s
	} else {
		r.m[tenant] = &Tenant{ID: tenant, State: s, Versions: map[string]int64{}}
	}
	return nil
}

// SetVersion records a registered tenant's version of module; it never
// moves it back.
func (r *MemoryRegistry) SetVersion(_ context.Context, tenant tenancy.ID, module string, v int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.m[tenant]; ok {
		t.Versions[module] = max(t.Versions[module], v)
	}
	return nil
}

// Remove forgets tenant.
func (r *MemoryRegistry) Remove(_ context.Context, tenant tenancy.ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, tenant)
	return nil
}

// RemoveModule forgets module's version of tenant, and tenant once no
// module's version is left.
func (r *MemoryRegistry) RemoveModule(_ context.Context, tenant tenancy.ID, module string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.m[tenant]; ok {
		delete(t.Versions, module)
		if len(t.Versions) == 0 {
			delete(r.m, tenant)
		}
	}
	return nil
}

// List returns copies of every entry, ordered by tenant.
func (r *MemoryRegistry) List(context.Context) ([]Tenant, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Tenant, 0, len(r.m))
	for _, t := range r.m {
		c := *t
		c.Versions = maps.Clone(t.Versions)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Tenant) int {
		ab, bb := a.ID.Bytes(), b.ID.Bytes()
		return bytes.Compare(ab[:], bb[:])
	})
	return out, nil
}
