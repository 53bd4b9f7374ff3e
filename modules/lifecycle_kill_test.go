package modules_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// families is the data of two stand-in modules, which outlives a
// process: module "a" stages an import and applies it at once (as
// PostgreSQL's one transaction), module "b" imports record by record (a
// crash leaves some written, as on MongoDB or Kafka). Each module holds two families per
// tenant, lists so that a record imported twice shows.
type families struct {
	mu   sync.Mutex
	data map[string]map[string]map[tenancy.ID][]string // module, family, tenant
	kill string
	// pause, when armed (pauseAt), holds the step that reaches it: paused
	// is closed then, and the step goes on once resume is.
	pause          string
	paused, resume chan struct{}
	// suspended is the app's store of suspensions.
	suspended map[tenancy.ID]bool
}

var famNames = []string{"docs", "keys"}

func newFamilies() *families {
	f := &families{data: map[string]map[string]map[tenancy.ID][]string{}, suspended: map[tenancy.ID]bool{}}
	for _, m := range []string{"a", "b"} {
		f.data[m] = map[string]map[tenancy.ID][]string{}
		for _, fam := range famNames {
			f.data[m][fam] = map[tenancy.ID][]string{}
		}
	}
	return f
}

// point panics with killed when it is the kill point armed, once.
func (f *families) point(name string) {
	f.mu.Lock()
	armed := f.kill == name
	if armed {
		f.kill = ""
	}
	hold := f.pause == name
	if hold {
		f.pause = ""
	}
	f.mu.Unlock()
	if armed {
		panic(killed{name})
	}
	if hold {
		close(f.paused)
		<-f.resume
	}
}

// pauseAt arms a pause at name: a step in another goroutine, which a kill
// cannot stop, is held there as a crashed process would have left it.
func (f *families) pauseAt(name string) (paused, resume chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pause, f.paused, f.resume = name, make(chan struct{}), make(chan struct{})
	return f.paused, f.resume
}

func (f *families) arm(name string) { f.mu.Lock(); f.kill = name; f.mu.Unlock() }

func (f *families) readSuspended(context.Context) ([]tenancy.ID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []tenancy.ID
	for id := range f.suspended {
		ids = append(ids, id)
	}
	return ids, nil
}

func (f *families) recordSuspended(_ context.Context, id tenancy.ID) error {
	f.point("before record")
	f.mu.Lock()
	f.suspended[id] = true
	f.mu.Unlock()
	f.point("record suspension")
	return nil
}

// snapshot is a copy of every module's families of tenant.
func (f *families) snapshot(id tenancy.ID) map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]string{}
	for m, fams := range f.data {
		for fam, by := range fams {
			if len(by[id]) > 0 {
				out[m+"/"+fam] = slices.Sorted(slices.Values(by[id]))
			}
		}
	}
	return out
}

func (f *families) state(m string) modules.TenantState {
	atomic := m == "a"
	fam := func(name string) modules.Family {
		return modules.Family{Name: name, Kind: migrate.KindKeys, Where: m + ":" + name, Route: name}
	}
	return modules.TenantState{Module: m, Backend: "kv", Version: 1,
		Provision: func(context.Context, tenancy.ID) error { return nil },
		Offboard: func(_ context.Context, id tenancy.ID) error {
			f.point("offboard " + m)
			for _, name := range famNames {
				f.mu.Lock()
				delete(f.data[m][name], id)
				f.mu.Unlock()
				f.point("offboard " + m + " " + name)
			}
			return nil
		},
		Verify: func(_ context.Context, id tenancy.ID) (modules.Erasure, error) {
			f.point("verify " + m)
			var e modules.Erasure
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, name := range famNames {
				sample := ""
				if n := len(f.data[m][name][id]); n > 0 {
					sample = f.data[m][name][id][0]
				}
				e.Check(fam(name), int64(len(f.data[m][name][id])), sample)
			}
			return e, nil
		},
		Export: func(_ context.Context, id tenancy.ID, out migrate.ArchiveOut) error {
			n := 0
			for _, name := range famNames {
				f.mu.Lock()
				vals := slices.Sorted(slices.Values(f.data[m][name][id]))
				f.mu.Unlock()
				for _, v := range vals {
					if n == 3 {
						f.point("export " + m)
					}
					n++
					b, _ := json.Marshal(v)
					if err := out.Emit(migrate.Record{Route: name, Family: name, Kind: "key", Key: v, Value: b}); err != nil {
						return err
					}
				}
			}
			return nil
		},
		Import: func(_ context.Context, id tenancy.ID, in migrate.ArchiveIn) error {
			f.point("import " + m)
			f.mu.Lock()
			for _, name := range famNames {
				if len(f.data[m][name][id]) > 0 {
					f.mu.Unlock()
					return migrate.ArchiveTargetNotEmpty(m, "kv", id, name)
				}
			}
			f.mu.Unlock()
			staged := map[string][]string{}
			n := 0
			for r, err := range migrate.RecordsOf(in) {
				if err != nil {
					return err
				}
				if atomic {
					staged[r.Family] = append(staged[r.Family], r.Key)
					continue
				}
				if n == 3 {
					f.point("import " + m + " half")
				}
				n++
				f.mu.Lock()
				f.data[m][r.Family][id] = append(f.data[m][r.Family][id], r.Key)
				f.mu.Unlock()
			}
			if atomic {
				f.point("import " + m + " half")
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			for name, keys := range staged {
				f.data[m][name][id] = append(f.data[m][name][id], keys...)
			}
			return nil
		},
	}
}

// run is one process over f: a fresh app whose in-process state (local
// suspensions, calls in flight) a kill loses, following f's store.
func (f *families) run(t *testing.T) *modules.Tenants {
	t.Helper()
	type core struct{}
	var tenants *modules.Tenants
	app := fx.New(fx.NopLogger, fx.Provide(func() core { return core{} }),
		modules.LifecycleWith(modules.LifecycleConfig{Suspended: f.readSuspended, Refresh: 5 * time.Millisecond}),
		modules.ProvideTenantState(func(core) modules.TenantState { return f.state("a") }),
		modules.ProvideTenantState(func(core) modules.TenantState { return f.state("b") }),
		fx.Populate(&tenants))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return tenants
}

// fill gives tenant id five records in each family of each module.
func (f *families) fill(id tenancy.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range []string{"a", "b"} {
		for _, name := range famNames {
			for i := range 5 {
				f.data[m][name][id] = append(f.data[m][name][id], fmt.Sprintf("%s-%s-%d", m, name, i))
			}
		}
	}
}

// mustKill runs step, which must stop at the kill point armed.
func mustKill(t *testing.T, kill string, step func() error) {
	t.Helper()
	var got any
	func() {
		defer func() { got = recover() }()
		err := step()
		t.Fatalf("the step ran to its end (%v) past the kill point %q", err, kill)
	}()
	if k, ok := got.(killed); !ok || k.at != kill {
		t.Fatalf("the step stopped with %v, want the kill at %q", got, kill)
	}
}

// erasedShape is a proof's content that must not depend on a kill: per
// module, the families found empty, left and kept.
func erasedShape(p modules.ErasureProof) string {
	p.Started, p.Ended, p.Digest = time.Time{}, time.Time{}, ""
	b, _ := json.Marshal(p)
	return string(b)
}

// TestOffboardKilledAtEveryCheckpointConverges: an offboard cut off at
// each of its checkpoints (before and right after it records the suspension,
// before the first teardown, with module a torn down and b not, halfway
// through a module's families, while verifying) and rerun in a new
// process ends where an uninterrupted offboard ends: erased, every
// family verified empty, the proof valid and alike, B untouched; and
// between the kill and the rerun the new process serves A nothing.
func TestOffboardKilledAtEveryCheckpointConverges(t *testing.T) {
	a, b := tenancytest.TenantA, tenancytest.TenantB
	ctx := context.Background()

	clean := newFamilies()
	clean.fill(a)
	rep, err := clean.run(t).OffboardWith(ctx, a, modules.OffboardOptions{RecordSuspended: clean.recordSuspended})
	if err != nil {
		t.Fatal(err)
	}
	want := rep.Proof(a)
	if !want.Erased {
		t.Fatalf("the uninterrupted offboard: %+v", want)
	}

	for _, kill := range []string{"before record", "record suspension", "offboard a", "offboard a docs", "offboard b", "offboard b docs", "offboard b keys", "verify a", "verify b"} {
		t.Run(kill, func(t *testing.T) {
			f := newFamilies()
			f.fill(a)
			f.fill(b)
			bBefore := f.snapshot(b)
			first := f.run(t)
			f.arm(kill)
			mustKill(t, kill, func() error {
				_, err := first.OffboardWith(ctx, a, modules.OffboardOptions{RecordSuspended: f.recordSuspended})
				return err
			})

			second := f.run(t)
			if kill == "before record" {
				// Killed before anything was written or removed: the new
				// process serves A, its data whole.
				if err := second.Check(a, "kv", "a", "docs"); err != nil || len(f.snapshot(a)) != 4 {
					t.Fatalf("A before its suspension was recorded: %v, %v", err, f.snapshot(a))
				}
			} else if err := second.Check(a, "kv", "a", "docs"); tenancy.CodeOf(err) != tenancy.CodeTenantSuspended {
				t.Fatalf("the new process serves A before the rerun: %v", err)
			}
			rep, err := second.OffboardWith(ctx, a, modules.OffboardOptions{RecordSuspended: f.recordSuspended})
			if err != nil {
				t.Fatalf("the rerun: %v", err)
			}
			p := rep.Proof(a)
			if err := p.Check(); err != nil || !p.Erased {
				t.Fatalf("the rerun's proof: erased %v, %v", p.Erased, err)
			}
			if got, w := erasedShape(p), erasedShape(want); got != w {
				t.Fatalf("the rerun's proof:\n%s\nwant:\n%s", got, w)
			}
			if _, err := second.VerifyErasure(ctx, a); err != nil {
				t.Fatalf("the verifier after the rerun: %v", err)
			}
			if left := f.snapshot(a); len(left) != 0 {
				t.Fatalf("A's data left: %v", left)
			}
			if !second.Suspended(a) {
				t.Fatal("A is served after its offboard")
			}
			if got := f.snapshot(b); fmt.Sprint(got) != fmt.Sprint(bBefore) {
				t.Fatalf("B changed: %v, was %v", got, bBefore)
			}
		})
	}
}

// TestImportKilledAtEveryCheckpointConverges: an import of A's archive
// into C cut off after the archive is verified and before the first
// module, before the staged module applies, between the modules and
// halfway through the record-by-record module's records, then recovered
// as docs/archive.md says (a plain rerun while nothing of C is written;
// otherwise offboard, provision, rerun) ends with C holding exactly A's records, none twice.
func TestImportKilledAtEveryCheckpointConverges(t *testing.T) {
	a, c := tenancytest.TenantA, tenancytest.TenantC
	ctx := context.Background()
	for _, kill := range []string{"import a", "import a half", "import b", "import b half"} {
		t.Run(kill, func(t *testing.T) {
			f := newFamilies()
			f.fill(a)
			first := f.run(t)
			var archive bytes.Buffer
			if err := first.Export(ctx, a, &archive); err != nil {
				t.Fatal(err)
			}
			f.arm(kill)
			mustKill(t, kill, func() error { return first.Import(ctx, c, bytes.NewReader(archive.Bytes())) })

			second := f.run(t)
			err := second.Import(ctx, c, bytes.NewReader(archive.Bytes()))
			if kill == "import b" || kill == "import b half" {
				// Module a wrote its records, b some: the rerun is
				// refused, nothing written, until C is offboarded and
				// provisioned again.
				if tenancy.CodeOf(err) != tenancy.CodeArchiveTargetNotEmpty {
					t.Fatalf("a plain rerun after a partial import: %v, want archive_target_not_empty", err)
				}
				if _, err := second.Offboard(ctx, c); err != nil {
					t.Fatal(err)
				}
				if _, err := second.Provision(ctx, c); err != nil {
					t.Fatal(err)
				}
				err = second.Import(ctx, c, bytes.NewReader(archive.Bytes()))
			}
			if err != nil {
				t.Fatalf("the rerun: %v", err)
			}
			if got, want := f.snapshot(c), f.snapshot(a); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("C after the rerun: %v\nwant A's: %v", got, want)
			}
			var again bytes.Buffer
			if err := second.Export(ctx, c, &again); err != nil {
				t.Fatal(err)
			}
			if g, w := manifestOf(t, again.Bytes()), manifestOf(t, archive.Bytes()); g != w {
				t.Fatalf("C's archive:\n%s\nA's:\n%s", g, w)
			}
		})
	}
}

// manifestOf is an archive's sections (counts and hashes) and skips.
func manifestOf(t *testing.T, archive []byte) string {
	t.Helper()
	var spool bytes.Buffer
	_, m, err := migrate.ReadArchive(bytes.NewReader(archive), &spool)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(struct {
		S any
		K any
	}{m.Sections, m.Skipped})
	return string(b)
}

// killingWriter passes the first n bytes written to w, then ends the
// process: a crash halfway through writing, past the archive writer's
// buffer.
type killingWriter struct {
	w *bytes.Buffer
	n int
}

func (k *killingWriter) Write(p []byte) (int, error) {
	if len(p) > k.n {
		k.w.Write(p[:k.n])
		panic(killed{"write"})
	}
	k.n -= len(p)
	return k.w.Write(p)
}

// TestExportKilledHalfwayConverges: an export cut off in a module's
// records (a hook of each module; the archive writer's buffer holds what
// it wrote) or halfway through the bytes written leaves a cut archive,
// which Import refuses as cut short (archive_invalid) with nothing
// written, as it refuses every other prefix of a whole one; a rerun in a
// new process writes an archive whose manifest (every section's count
// and sha256) is the uninterrupted one's.
func TestExportKilledHalfwayConverges(t *testing.T) {
	a, c := tenancytest.TenantA, tenancytest.TenantC
	ctx := context.Background()
	for _, kill := range []string{"export a", "export b", "write"} {
		t.Run(kill, func(t *testing.T) {
			f := newFamilies()
			f.fill(a)
			first := f.run(t)
			var whole bytes.Buffer
			if err := first.Export(ctx, a, &whole); err != nil {
				t.Fatal(err)
			}
			var cut bytes.Buffer
			w := io.Writer(&cut)
			if kill == "write" {
				w = &killingWriter{w: &cut, n: whole.Len() / 2}
			} else {
				f.arm(kill)
			}
			mustKill(t, kill, func() error { return first.Export(ctx, a, w) })
			if kill == "write" && cut.Len() != whole.Len()/2 {
				t.Fatalf("the cut archive has %d bytes, want %d", cut.Len(), whole.Len()/2)
			}

			second := f.run(t)
			if err := second.Import(ctx, c, bytes.NewReader(cut.Bytes())); tenancy.CodeOf(err) != tenancy.CodeArchiveInvalid {
				t.Fatalf("the cut archive (%d bytes): %v, want archive_invalid", cut.Len(), err)
			}
			for n := range whole.Len() {
				if err := second.Import(ctx, c, bytes.NewReader(whole.Bytes()[:n])); tenancy.CodeOf(err) != tenancy.CodeArchiveInvalid {
					t.Fatalf("the archive cut at byte %d of %d: %v, want archive_invalid", n, whole.Len(), err)
				}
			}
			if got := f.snapshot(c); len(got) != 0 {
				t.Fatalf("a refused archive wrote %v", got)
			}
			var again bytes.Buffer
			if err := second.Export(ctx, a, &again); err != nil {
				t.Fatal(err)
			}
			if g, w := manifestOf(t, again.Bytes()), manifestOf(t, whole.Bytes()); g != w {
				t.Fatalf("the rerun's manifest:\n%s\nwant:\n%s", g, w)
			}
			if err := second.Import(ctx, c, bytes.NewReader(again.Bytes())); err != nil {
				t.Fatal(err)
			}
			if got, want := f.snapshot(c), f.snapshot(a); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("C from the rerun's archive: %v, want %v", got, want)
			}
		})
	}
}
