package migrate

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Options bound and report a run over many tenants.
type Options struct {
	// Concurrency is how many tenants run at once (default 4). Each holds
	// one connection while it runs.
	Concurrency int
	// DryRun lists what would change and changes nothing.
	DryRun bool
	// Logger receives a progress line every Every tenants and one per
	// failure (default: no logging).
	Logger *slog.Logger
	// Every is the progress interval in tenants (default 100).
	Every int
	// Progress, when set (a terminal), receives a progress line rewritten
	// in place ("\r").
	Progress io.Writer
}

// Failure is one tenant whose run failed; the others went on.
type Failure struct {
	Tenant tenancy.ID
	Err    error
}

// Change is one step applied (or, in a dry run, that would be).
type Change struct {
	Tenant  tenancy.ID // zero: the shared tables
	Module  string
	Version int64
	Name    string
}

// Report is the outcome of a run.
type Report struct {
	Op       string
	Total    int
	Done     int // tenants that completed (changed or already current)
	Failures []Failure
	Changes  []Change
	Elapsed  time.Duration
	// Err is the context's error when the run was cut short: the tenants
	// not reached are neither done nor failed, and a rerun picks them up.
	Err error
}

// PerSecond is the completed tenants per second.
func (r Report) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Done) / r.Elapsed.Seconds()
}

// Recorder collects a tenant's changes; it is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	changes []Change
}

// Add records changes.
func (r *Recorder) Add(c ...Change) {
	r.mu.Lock()
	r.changes = append(r.changes, c...)
	r.mu.Unlock()
}

// Each runs fn for every tenant, at most o.Concurrency at once. A tenant's
// failure is reported in the Report and does not stop the others; a
// cancelled ctx stops handing out tenants and the run returns what it
// finished. op names the run in progress lines ("migrate orders").
func Each(ctx context.Context, op string, tenants []tenancy.ID, o Options, fn func(ctx context.Context, tenant tenancy.ID, rec *Recorder) error) Report {
	return EachBatch(ctx, op, tenants, 1, o, func(ctx context.Context, batch []tenancy.ID, rec *Recorder) []error {
		return []error{fn(ctx, batch[0], rec)}
	})
}

// EachBatch is Each for backends that serve many tenants in one request
// (Kafka creates a batch's topics in one admin call): fn gets up to size
// tenants and returns one error per tenant, in order (nil: done).
func EachBatch(ctx context.Context, op string, tenants []tenancy.ID, size int, o Options, fn func(ctx context.Context, batch []tenancy.ID, rec *Recorder) []error) Report {
	workers := o.Concurrency
	if workers <= 0 {
		workers = 4
	}
	every := o.Every
	if every <= 0 {
		every = 100
	}
	size = max(size, 1)
	start := time.Now()
	rep := Report{Op: op, Total: len(tenants)}
	rec := &Recorder{}
	var mu sync.Mutex
	finished := 0
	progress := func(before int, force bool) {
		// Called with mu held: a line each time finished passes a
		// multiple of every.
		if before/every == finished/every && !force {
			return
		}
		el := time.Since(start)
		rate := float64(finished) / max(el.Seconds(), 1e-9)
		if o.Logger != nil {
			o.Logger.Info(op, "done", rep.Done, "failed", len(rep.Failures), "total", rep.Total, "per_sec", int(rate))
		}
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "\r%s: %d/%d done, %d failed, %.0f tenants/s ", op, rep.Done, rep.Total, len(rep.Failures), rate)
		}
	}
	next := make(chan []tenancy.ID)
	var wg sync.WaitGroup
	for range min(workers, max((len(tenants)+size-1)/size, 1)) {
		wg.Go(func() {
			for batch := range next {
				errs := fn(ctx, batch, rec)
				mu.Lock()
				before := finished
				finished += len(batch)
				for i, t := range batch {
					var err error
					if i < len(errs) {
						err = errs[i]
					} else {
						err = fmt.Errorf("migrate: %s returned no result for tenant %s", op, t)
					}
					if err != nil {
						rep.Failures = append(rep.Failures, Failure{Tenant: t, Err: err})
						if o.Logger != nil {
							o.Logger.Error(op+" failed", "tenant", t.String(), "err", err)
						}
					} else {
						rep.Done++
					}
				}
				progress(before, false)
				mu.Unlock()
			}
		})
	}
feed:
	for i := 0; i < len(tenants); i += size {
		select {
		case next <- tenants[i:min(i+size, len(tenants))]:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	rep.Err = ctx.Err()
	rep.Elapsed = time.Since(start)
	rep.Changes = rec.changes
	mu.Lock()
	progress(finished, true)
	mu.Unlock()
	if o.Progress != nil {
		fmt.Fprintln(o.Progress)
	}
	return rep
}
