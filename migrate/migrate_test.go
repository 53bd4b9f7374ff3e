package migrate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

func TestLoad(t *testing.T) {
	set, err := migrate.Load(fstest.MapFS{
		"0010_c.sql": {Data: []byte("c")}, "2_b.sql": {Data: []byte("b")}, "0001_a_b.sql": {Data: []byte("a")},
		"sub/0009_x.sql": {Data: []byte("ignored: not at the top")},
	}, "sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 3 || set[0].Version != 1 || set[0].Name != "a_b" || set[1].Version != 2 || set[2].Version != 10 || set.Latest() != 10 {
		t.Fatalf("%+v", set)
	}
	if set[0].Checksum != "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb" { // sha256("a")
		t.Errorf("checksum %s", set[0].Checksum)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"no version":   {"a.sql": {}},
		"zero":         {"0_a.sql": {}},
		"no name":      {"0001_.sql": {}},
		"no kind":      {"0001_a": {}},
		"wrong kind":   {"0001_a.json": {}},
		"same version": {"0001_a.sql": {}, "01_b.sql": {}},
	} {
		if _, err := migrate.Load(fsys, "sql"); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}

func TestPending(t *testing.T) {
	set, _ := migrate.Load(fstest.MapFS{"1_a.sql": {Data: []byte("a")}, "2_b.sql": {Data: []byte("b")}, "3_c.sql": {Data: []byte("c")}})
	ap := func(sts ...migrate.Step) (out []migrate.Applied) {
		for _, s := range sts {
			out = append(out, migrate.Applied{Version: s.Version, Name: s.Name, Checksum: s.Checksum})
		}
		return out
	}
	tn := tenancy.MustParseID("00000000-0000-4000-8000-000000000001")
	p, err := set.Pending(ap(set[0]), "m", "postgres", tn)
	if err != nil || len(p) != 2 || p[0].Version != 2 {
		t.Fatalf("%v %v", p, err)
	}
	edited := ap(set[0])
	edited[0].Checksum = "x"
	for name, applied := range map[string][]migrate.Applied{
		"edited":       edited,
		"out of order": ap(set[0], set[2]),
		"removed":      append(ap(set[0]), migrate.Applied{Version: 4, Name: "d"}),
	} {
		_, err := set.Pending(applied, "m", "postgres", tn)
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeMigrationHistoryConflict || te.Module != "m" || !strings.Contains(te.Detail, tn.String()) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestEach: bounded concurrency, failures isolated, progress lines, and a
// cancelled context stops handing out tenants.
func TestEach(t *testing.T) {
	tenants := make([]tenancy.ID, 50)
	for i := range tenants {
		tenants[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1))
	}
	var running, peak atomic.Int32
	var log, bar bytes.Buffer
	rep := migrate.Each(context.Background(), "op", tenants, migrate.Options{Concurrency: 3, Every: 10, Logger: slog.New(slog.NewTextHandler(&log, nil)), Progress: &bar},
		func(_ context.Context, tn tenancy.ID, rec *migrate.Recorder) error {
			n := running.Add(1)
			defer running.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(time.Millisecond)
			if tn == tenants[7] {
				return errors.New("boom")
			}
			rec.Add(migrate.Change{Tenant: tn})
			return nil
		})
	if rep.Done != 49 || len(rep.Failures) != 1 || rep.Failures[0].Tenant != tenants[7] || len(rep.Changes) != 49 || rep.Err != nil {
		t.Fatalf("%+v", rep)
	}
	if peak.Load() > 3 {
		t.Errorf("%d ran at once, bound 3", peak.Load())
	}
	if n := strings.Count(log.String(), "msg=op "); n != 6 { // 10, 20, ..., 50, and the final line
		t.Errorf("%d progress lines:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "op failed") || !strings.Contains(bar.String(), "\rop: 49/50 done, 1 failed") {
		t.Errorf("log:\n%s\nbar: %q", log.String(), bar.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	rep = migrate.Each(ctx, "op", tenants, migrate.Options{Concurrency: 2}, func(context.Context, tenancy.ID, *migrate.Recorder) error {
		if ran.Add(1) == 5 {
			cancel()
		}
		return nil
	})
	if rep.Err == nil || rep.Done >= 50 || int(ran.Load()) != rep.Done {
		t.Errorf("cancelled run: %+v, ran %d", rep, ran.Load())
	}
}
