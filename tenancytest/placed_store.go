package tenancytest

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// PlacedStore is an app's store of tenant records (plans and placements)
// held in memory, shared by the replicas, or the processes, a test starts
// over the same data: Read is modules.LifecycleConfig.Placed, Write is
// modules.MoveOptions.Record. It outlives any one of them, as a store
// does.
type PlacedStore struct {
	mu   sync.Mutex
	recs map[tenancy.ID]modules.Placed
}

// Read is every record, for LifecycleConfig.Placed.
func (s *PlacedStore) Read(context.Context) ([]modules.Placed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.recs)), nil
}

// Write keeps a copy of p, for MoveOptions.Record.
func (s *PlacedStore) Write(_ context.Context, p modules.Placed) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recs == nil {
		s.recs = map[tenancy.ID]modules.Placed{}
	}
	s.recs[p.Tenant] = p.Clone()
	return nil
}

// Get is tenant's record as written last (the zero record when none).
func (s *PlacedStore) Get(tenant tenancy.ID) modules.Placed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recs[tenant]
}
