package routing

import (
	"cmp"
	"slices"
	"sync"
)

// observed holds every open Pools of the process, for metrics: a module
// registers nothing, and an app with no meter pays one map store per
// Pools built.
var observed sync.Map // *Pools[C] -> observedPools

type observedPools struct {
	module, backend string
	stats           func() Stats
}

// PoolStats is one open Pools' state, for metrics.
type PoolStats struct {
	Module, Backend string
	Stats
}

// Observe returns the state of every open Pools of the process, by
// backend and module.
func Observe() []PoolStats {
	var out []PoolStats
	observed.Range(func(_, v any) bool {
		o := v.(observedPools)
		out = append(out, PoolStats{Module: o.module, Backend: o.backend, Stats: o.stats()})
		return true
	})
	slices.SortFunc(out, func(a, b PoolStats) int {
		return cmp.Or(cmp.Compare(a.Backend, b.Backend), cmp.Compare(a.Module, b.Module))
	})
	return out
}
