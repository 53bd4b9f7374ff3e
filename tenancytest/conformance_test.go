package tenancytest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// toyRules exercises every rule flag that removes a cell.
var toyRules = floors.Backend{
	Name:    "toy",
	Ceiling: tenancy.Dedicated,
	Kinds: map[floors.Kind]floors.KindRule{
		"doc":   {},
		"log":   {NeverNamespace: true},
		"topic": {NoTagged: true},
		"beat":  {Fleet: true},
		"raw":   {Origin: tenancy.Raw},
		"dyn":   {Origin: tenancy.Compiled},
	},
}

func cellNames(cs []tenancytest.Cell) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

func TestCells(t *testing.T) {
	want := []string{
		"doc/tagged", "doc/namespace", "doc/dedicated",
		"dyn/namespace", "dyn/dedicated",
		"log/tagged", "log/dedicated",
		"raw/dedicated",
		"topic/namespace", "topic/dedicated",
	}
	if got := cellNames(tenancytest.Cells(toyRules)); !slices.Equal(got, want) {
		t.Fatalf("cells of the toy rules:\n got %v\nwant %v", got, want)
	}
	low := toyRules
	low.Ceiling = tenancy.Namespace
	want = []string{"doc/tagged", "doc/namespace", "dyn/namespace", "log/tagged", "topic/namespace"}
	if got := cellNames(tenancytest.Cells(low)); !slices.Equal(got, want) {
		t.Fatalf("cells under a namespace ceiling:\n got %v\nwant %v", got, want)
	}
}

// toyStore keeps records per tenant; its faults are the ways a real
// backend gets isolation wrong.
type toyStore struct {
	leaky bool // ignores the tenant
	blind bool // never finds anything
	open  bool // an unbound call runs as the default tenant
	// nameless: its tenant_unbound does not say which module and route.
	nameless bool
	// delivered: Read reports deliveries; unboundSeen: one ran unbound.
	delivered, unboundSeen bool
	// unsuspendable: it never checks the suspended set.
	unsuspendable bool
	susp          *modules.Suspensions
	mu            sync.Mutex
	data          map[string]bool
}

var errNotFound = errors.New("not found")

func (s *toyStore) key(ctx context.Context) (string, error) {
	id, err := tenancy.Require(ctx)
	if err != nil {
		if !s.open {
			e := &tenancy.Error{Code: tenancy.CodeTenantUnbound, Backend: "toy", Module: "m", Route: "r", Fix: "bind a tenant first"}
			if s.nameless {
				e.Module, e.Route = "", ""
			}
			return "", e
		}
		id = tenancy.Default
	}
	if !s.unsuspendable {
		if err := s.susp.Check(id, "toy", "m", "r"); err != nil {
			return "", err
		}
	}
	if s.leaky {
		return "rec", nil
	}
	return id.String() + "/rec", nil
}

func (s *toyStore) probe() tenancytest.Probe {
	s.data = map[string]bool{}
	s.susp = &modules.Suspensions{}
	found := func(ctx context.Context) (bool, error) {
		k, err := s.key(ctx)
		if err != nil {
			return false, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.data[k] && !s.blind, nil
	}
	return tenancytest.Probe{
		Suspensions: s.susp,
		Delivered:   s.delivered,
		RecordID:    "rec",
		Write: func(ctx context.Context) error {
			k, err := s.key(ctx)
			if err != nil {
				return err
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.data[k] = true
			return nil
		},
		Read: func(ctx context.Context) (bool, error) {
			if _, bound := tenancy.FromContext(ctx); !bound && s.delivered {
				return s.unboundSeen, nil
			}
			return found(ctx)
		},
		Count: func(ctx context.Context) (int, error) {
			ok, err := found(ctx)
			if ok {
				return 1, err
			}
			return 0, err
		},
		Delete: func(ctx context.Context) error {
			k, err := s.key(ctx)
			if err != nil {
				return err
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if !s.data[k] {
				return errNotFound
			}
			delete(s.data, k)
			return nil
		},
	}
}

// factories are the child runs: each is a Factory a child test process
// hands to Conformance.
var factories = map[string]tenancytest.Factory{
	"sound": func(*testing.T, floors.Kind, tenancy.Tier) (tenancytest.Probe, error) {
		return (&toyStore{}).probe(), nil
	},
	"leaky": func(_ *testing.T, k floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
		return (&toyStore{leaky: k == "log" && tier == tenancy.Tagged}).probe(), nil
	},
	"blind": func(*testing.T, floors.Kind, tenancy.Tier) (tenancytest.Probe, error) {
		return (&toyStore{blind: true}).probe(), nil
	},
	"open": func(*testing.T, floors.Kind, tenancy.Tier) (tenancytest.Probe, error) {
		return (&toyStore{open: true}).probe(), nil
	},
	"nameless": func(*testing.T, floors.Kind, tenancy.Tier) (tenancytest.Probe, error) {
		return (&toyStore{nameless: true}).probe(), nil
	},
	"uncovered": func(_ *testing.T, k floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
		if k == "topic" || tier == tenancy.Dedicated && k == "raw" {
			return tenancytest.Probe{}, tenancytest.ErrNotCovered
		}
		return (&toyStore{}).probe(), nil
	},
	"unavailable": func(_ *testing.T, k floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
		if k == "dyn" && tier == tenancy.Namespace {
			return tenancytest.Probe{}, tenancytest.Unavailable("the toy server has no schemas")
		}
		return (&toyStore{}).probe(), nil
	},
	"unavailable-silent": func(_ *testing.T, k floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
		if k == "dyn" {
			return tenancytest.Probe{}, tenancytest.Unavailable(" ")
		}
		return (&toyStore{}).probe(), nil
	},
	"delivered": func(t *testing.T, _ floors.Kind, _ tenancy.Tier) (tenancytest.Probe, error) {
		return withFair((&toyStore{delivered: true}).probe(), newQueue(t, true).worker()), nil
	},
	"delivered-unfair": func(t *testing.T, _ floors.Kind, _ tenancy.Tier) (tenancytest.Probe, error) {
		w := newQueue(t, false).worker()
		w.Timeout = 300 * time.Millisecond // it fails on the first parked round
		return withFair((&toyStore{delivered: true}).probe(), w), nil
	},
	"delivered-no-worker": func(*testing.T, floors.Kind, tenancy.Tier) (tenancytest.Probe, error) {
		return (&toyStore{delivered: true}).probe(), nil
	},
	"delivered-unbound": func(t *testing.T, _ floors.Kind, _ tenancy.Tier) (tenancytest.Probe, error) {
		return withFair((&toyStore{delivered: true, unboundSeen: true}).probe(), newQueue(t, true).worker()), nil
	},
	"skips": func(t *testing.T, k floors.Kind, _ tenancy.Tier) (tenancytest.Probe, error) {
		if k == "log" {
			t.Skip("SKIPPED: no log server here")
		}
		return (&toyStore{}).probe(), nil
	},
	"unsuspendable": func(*testing.T, floors.Kind, tenancy.Tier) (tenancytest.Probe, error) {
		return (&toyStore{unsuspendable: true}).probe(), nil
	},
	"no-suspensions": func(*testing.T, floors.Kind, tenancy.Tier) (tenancytest.Probe, error) {
		p := (&toyStore{}).probe()
		p.Suspensions = nil
		return p, nil
	},
	"broken": func(*testing.T, floors.Kind, tenancy.Tier) (tenancytest.Probe, error) {
		return tenancytest.Probe{}, errors.New("server down")
	},
}

// withFair is p with w as its worker.
func withFair(p tenancytest.Probe, w tenancytest.Worker) tenancytest.Probe {
	p.Fair = &w
	return p
}

const childEnv = "TENANTWIRE_KIT_CHILD"

// TestConformanceChild is the test a child process runs: Conformance over
// the toy rules with the factory its environment names.
func TestConformanceChild(t *testing.T) {
	name := os.Getenv(childEnv)
	if name == "" {
		t.Skip("run only as a child process of TestConformanceVerdicts")
	}
	tenancytest.Conformance(t, toyRules, factories[name])
}

// TestConformanceVerdicts runs the kit in child test processes, so that a
// failing kit fails a real *testing.T, and checks each verdict and what the
// kit says about it.
func TestConformanceVerdicts(t *testing.T) {
	for _, c := range []struct {
		factory string
		pass    bool
		says    []string
	}{
		{"sound", true, []string{"--- PASS: TestConformanceChild/doc/dedicated", "probing write, read, count, delete"}},
		{"leaky", false, []string{"--- FAIL: TestConformanceChild/log/tagged", "read under B: found=true"}},
		{"blind", false, []string{"read under A: found=false, want true"}},
		{"open", false, []string{"write under no tenant succeeded: want tenant_unbound", "read under tenant-global succeeded"}},
		{"nameless", false, []string{`write under no tenant: tenant_unbound names module="" backend="toy" route=""; want all three`}},
		{"uncovered", false, []string{
			"--- FAIL: TestConformanceChild/topic/namespace",
			"toy topic: the rules say a route reaches namespace, but the factory builds no probe for it",
			"toy: 3 of 10 cells the rules reach have no probe: raw/dedicated, topic/namespace, topic/dedicated",
		}},
		{"unavailable", true, []string{"--- SKIP: TestConformanceChild/dyn/namespace", "SKIPPED toy dyn/namespace: the toy server has no schemas"}},
		{"unavailable-silent", false, []string{"toy dyn/namespace: unavailable without a reason"}},
		{"delivered", true, []string{"--- PASS: TestConformanceChild/topic/dedicated"}},
		{"delivered-unfair", false, []string{"fairness: 5 of 5 of a served tenant's items not delivered"}},
		{"delivered-no-worker", false, []string{"toy topic/dedicated: the probe's Read reports a worker's deliveries, but it sets no Fair"}},
		{"delivered-unbound", false, []string{"delivered under no tenant: found=true err=<nil>, want nothing delivered"}},
		{"skips", true, []string{"toy: cell skipped: log/tagged: the factory skipped it", "toy: cell skipped: log/dedicated"}},
		{"broken", false, []string{"the factory failed: server down"}},
		{"unsuspendable", false, []string{"write under suspended A succeeded: want tenant_suspended", "count under suspended A succeeded"}},
		{"no-suspensions", false, []string{"Probe.Suspensions is nil"}},
	} {
		t.Run(c.factory, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestConformanceChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+c.factory)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatalf("child did not run: %v", err)
			}
			if passed := err == nil; passed != c.pass {
				t.Errorf("kit passed=%v, want %v; output:\n%s", passed, c.pass, out)
			}
			for _, s := range c.says {
				if !strings.Contains(string(out), s) {
					t.Errorf("kit output lacks %q; output:\n%s", s, out)
				}
			}
		})
	}
}

// The sound store passes in this process too: the kit is usable as is.
func TestConformanceSoundStore(t *testing.T) {
	tenancytest.Conformance(t, toyRules, factories["sound"])
}

func TestFailsClosedNeedsWriteAndRead(t *testing.T) {
	if failed := runWith(t, tenancytest.FailsClosed, tenancytest.Probe{}); len(failed) == 0 {
		t.Fatal("FailsClosed accepted a probe with no operations")
	}
}

// runWith runs check on a recorder, as run does for Boundary.
func runWith(t *testing.T, check func(testing.TB, tenancytest.Probe), p tenancytest.Probe) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r, p)
	}()
	<-done
	return r.failed
}
