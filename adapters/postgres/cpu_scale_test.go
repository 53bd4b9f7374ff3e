//go:build linux

package postgres_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
)

// TestCPUScaleNamespace: the CPU one namespace point read costs, on the
// server (the backend's on-CPU time, /proc/<pid>/schedstat) and in this
// process (getrusage), for the route and the three hand-written patterns
// of TestRatioScaleNamespace, over TENANTWIRE_SCALE_TENANTS tenants. Unlike
// a wall-clock ratio it barely moves when other work shares the cores, so
// it shows where a read's time goes on a busy machine. Not part of `make
// bench`: run it with TENANTWIRE_BENCH=1 against a server on this host.
func TestCPUScaleNamespace(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	for _, n := range scaleCounts(t) {
		t.Run(strconv.Itoa(n), func(t *testing.T) { cpuNamespace(t, n) })
	}
}

func cpuNamespace(t *testing.T, n int) {
	f := newScaleFleet(t, n)
	schemas := make([]string, n)
	for i, id := range f.ids {
		schemas[i] = pgx.Identifier{postgres.SchemaName(scalePrefix, id)}.Sanitize()
	}
	ctx := context.Background()
	pool, _ := scalePool(t)
	var d *postgres.Documents[item]
	start(t, scaleModule(pool), &d)
	type side struct {
		name string
		pool *pgxpool.Pool
		read func(i int)
	}
	sides := []side{{"ours", pool, func(i int) {
		_, err := d.Get(f.ctxs[i%n], "k")
		must0(t, err)
	}}}
	// The hand-written statement in exec mode at every count: this test
	// shows what planning per read costs, prepared or not.
	for _, b := range namespaceBaselines(t, f, schemas, pgx.QueryExecModeExec) {
		name := b.name
		if name == "hand" {
			name = "hand-exec"
		}
		sides = append(sides, side{name, b.pool, func(i int) {
			var v int64
			var raw []byte
			b.run(i%n, nsGet, []any{"k"}, &v, &raw)
			decode(t, raw)
		}})
	}
	pids := make([]int, len(sides))
	for s, side := range sides {
		must0(t, side.pool.QueryRow(ctx, "SELECT pg_catalog.pg_backend_pid()").Scan(&pids[s]))
		if _, err := backendCPU(pids[s]); err != nil {
			t.Skipf("the server's backends are not processes of this host (%v): nothing to read their CPU time from", err)
		}
		for i := range n { // warm: every relation touched once
			side.read(i)
		}
	}
	iters := max(2000, n)
	server, client := make([][]float64, len(sides)), make([][]float64, len(sides))
	for range 5 {
		for s, side := range sides {
			s0, _ := backendCPU(pids[s])
			c0 := processCPU()
			for i := range iters {
				side.read(i)
			}
			s1, err := backendCPU(pids[s])
			must0(t, err)
			server[s] = append(server[s], float64(s1-s0)/float64(iters)/1e3)
			client[s] = append(client[s], float64(processCPU()-c0)/float64(iters)/1e3)
		}
	}
	median := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
	for s, side := range sides {
		t.Logf("S%d %-11s server %6.1f us/read, client %6.1f us/read", n, side.name, median(server[s]), median(client[s]))
	}
}

// backendCPU is a process's time on a CPU so far.
func backendCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
	return time.Duration(ns), err
}

// processCPU is this process's user and system time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
