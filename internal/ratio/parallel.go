package ratio

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
)

// ProfileEnv names a directory: when set, ReportParallel takes a mutex and
// a block profile of the ours side of each concurrency pair and writes them
// there, to read with `go tool pprof -top`.
const ProfileEnv = "TENANTWIRE_BENCH_PROFILE"

// Parallel calls f(0) to f(n-1) from g goroutines, each taking the next
// index from a shared counter, and returns when every call has returned.
// After a call fails, no new index is handed out and the first error is
// returned. Both sides of a concurrency pair call it with the same g and n,
// so that they differ only in f.
func Parallel(g, n int, f func(i int) error) error {
	g = max(1, min(g, n))
	var next atomic.Int64
	var failed atomic.Bool
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	return first
}

// ParallelSide is a side of a concurrency pair: each call of it runs n
// operations with Parallel from g goroutines, op(k) for tenant index k,
// walking on through the tenants 0 to tenants-1 where its last call
// stopped (as Cycle does for a side of one goroutine), so that its rounds
// reach every tenant. A failed operation fails the test.
func ParallelSide(t testing.TB, g, tenants int, op func(tenant int) error) func(n int) {
	off := 0
	return func(n int) {
		base := off
		if err := Parallel(g, n, func(i int) error { return op((base + i) % tenants) }); err != nil {
			t.Fatal(err)
		}
		off = (base + n) % tenants
	}
}

// ReportParallel is Report for a concurrency pair; when ProfileEnv is set it
// then runs the ours side once more, n operations, with every contended
// mutex and every blocking event recorded, and writes the profiles as
// <label>-<name>.mutex.pb.gz and .block.pb.gz. Only that run is recorded:
// both rates are off before and after it (profiles are cumulative within a
// process, so profile one pair per process, e.g. with -run).
func ReportParallel(t testing.TB, p Pair, target float64, n int) Result {
	t.Helper()
	r := Report(t, p, target)
	dir := os.Getenv(ProfileEnv)
	if dir == "" {
		return r
	}
	prevFraction := runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	p.Ours(n)
	runtime.SetBlockProfileRate(0)
	runtime.SetMutexProfileFraction(prevFraction)
	for _, kind := range []string{"mutex", "block"} {
		path := filepath.Join(dir, fmt.Sprintf("%s-%s.%s.pb.gz", p.Label, p.Name, kind))
		if err := writeProfile(kind, path); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s profile of the ours side: %s", kind, path)
	}
	return r
}

func writeProfile(kind, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(kind).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
