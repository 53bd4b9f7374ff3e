package redis

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// bytesPerRun is testing.AllocsPerRun for bytes: the heap bytes one call
// of f allocates. TotalAlloc counts every goroutine's allocations (a
// client's pool reaper, an earlier test's app), which can only add to f's,
// so the least of five trials is f's own.
func bytesPerRun(runs int, f func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	least := uint64(math.MaxUint64)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			f()
		}
		runtime.ReadMemStats(&after)
		least = min(least, (after.TotalAlloc-before.TotalAlloc)/uint64(runs))
	}
	return least
}

// A key is one allocation of the smallest size class that holds it,
// whatever its segments and the length of its user key: the builder is
// sized exactly, neither short (a second allocation when the key ends
// just past a size class) nor long (a larger class, as when a namespace
// key reserved room for a tenant segment it does not have).
func TestKeyAllocatesOnceAndExactly(t *testing.T) {
	id := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	var key string
	for _, marker := range []string{"s", "t", "n", "nt", "dnt"} {
		for n := range 150 {
			user := strings.Repeat("u", n)
			build := func() { key = buildKey(marker, "ns0a0a0a0a00004000800000000000000a", id, 'c', "sessions", user) }
			if a := testing.AllocsPerRun(10, build); a != 1 {
				t.Fatalf("marker %s, user key of %d bytes: %v allocations", marker, n, a)
			}
			// Size classes up to 256 bytes are 16 bytes apart.
			if b := bytesPerRun(10, build); b >= uint64(len(key))+16 {
				t.Fatalf("marker %s, user key of %d bytes: a %d-byte key allocated %d bytes", marker, n, len(key), b)
			}
		}
	}
}
