package tenancytest_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }
func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

// run executes the probe on its own goroutine so Fatalf can stop it.
func run(t *testing.T, p tenancytest.Probe) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tenancytest.Boundary(r, p)
	}()
	<-done
	return r.failed
}

// store is a toy route; leaky ignores the tenant, blind never finds anything.
type store struct {
	leaky, blind bool
	data         map[string]string
}

func (s *store) key(ctx context.Context) string {
	id, _ := tenancy.FromContext(ctx)
	if s.leaky {
		return "k"
	}
	return id.String() + "/k"
}

func (s *store) probe() tenancytest.Probe {
	s.data = map[string]string{}
	return tenancytest.Probe{
		RecordID: "k",
		Write:    func(ctx context.Context) error { s.data[s.key(ctx)] = "v"; return nil },
		Read: func(ctx context.Context) (bool, error) {
			_, ok := s.data[s.key(ctx)]
			return ok && !s.blind, nil
		},
		List: func(ctx context.Context) ([]string, error) {
			if _, ok := s.data[s.key(ctx)]; ok && !s.blind {
				return []string{"k"}, nil
			}
			return nil, nil
		},
		Delete: func(ctx context.Context) error {
			if _, ok := s.data[s.key(ctx)]; !ok {
				return fmt.Errorf("not found")
			}
			delete(s.data, s.key(ctx))
			return nil
		},
	}
}

func TestBoundaryPassesOnIsolatedStore(t *testing.T) {
	if failed := run(t, (&store{}).probe()); len(failed) > 0 {
		t.Fatalf("an isolated store failed the probe: %v", failed)
	}
}

func TestBoundaryCatchesLeak(t *testing.T) {
	if failed := run(t, (&store{leaky: true}).probe()); len(failed) == 0 {
		t.Fatal("a store that ignores the tenant passed the probe")
	}
}

func TestBoundaryCannotPassBySeeingNothing(t *testing.T) {
	if failed := run(t, (&store{blind: true}).probe()); len(failed) == 0 {
		t.Fatal("a store that never finds anything passed the probe")
	}
}
