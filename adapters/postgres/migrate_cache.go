package postgres

import (
	"sync"

	"github.com/tenantwire/tenantwire/tenancy"
)

// maxCurrent bounds the tenants remembered as current; past it the set is
// cleared (each tenant then pays one more version read).
const maxCurrent = 1 << 16

// currentSet is the tenants of one client (one module) whose target was
// found at or above the required version. Versions only move forward, so
// a tenant stays current until torn down (forget).
type currentSet struct {
	mu sync.RWMutex
	m  map[tenancy.ID]struct{}
}

func (s *currentSet) has(t tenancy.ID) bool {
	s.mu.RLock()
	_, ok := s.m[t]
	s.mu.RUnlock()
	return ok
}

func (s *currentSet) add(t tenancy.ID) {
	s.mu.Lock()
	if s.m == nil || len(s.m) >= maxCurrent {
		s.m = make(map[tenancy.ID]struct{})
	}
	s.m[t] = struct{}{}
	s.mu.Unlock()
}

func (s *currentSet) forget(t tenancy.ID) {
	s.mu.Lock()
	delete(s.m, t)
	s.mu.Unlock()
}
