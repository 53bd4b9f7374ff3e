// Package lifebench measures a tenant's whole life at scale on the real
// servers, through modules.Tenants: onboarding (provisioning interrupted
// halfway, then rerun to completion), a first write, a suspension and its
// lifting, offboarding and its rerun, and a check on the server that
// nothing of the tenants is left. Each step prints one line:
//
//	scale lifecycle-<backend> step=<step> tenants=<n> concurrency=<c> elapsed=<s> per_sec=<rate>
//
// docs/lifecycle.md's runbook takes its figures from these lines.
package lifebench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TenantsEnv sets how many tenants every backend's run takes; unset, each
// backend takes its own default.
const TenantsEnv = "TENANTWIRE_LIFECYCLE_TENANTS"

// ConcurrencyEnv sets how many tenants are provisioned, written and
// offboarded at once (default 8).
const ConcurrencyEnv = "TENANTWIRE_LIFECYCLE_CONCURRENCY"

// Tenants is the run's tenant count: TenantsEnv, else def.
func Tenants(t testing.TB, def int) int { return envInt(t, TenantsEnv, def) }

func envInt(t testing.TB, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 2 {
		t.Fatalf("%s=%q: want a whole number of at least 2", key, v)
	}
	return n
}

// Backend is one app under measurement.
type Backend struct {
	// Name labels the lines ("postgres-namespace").
	Name    string
	Tenants *modules.Tenants
	// Write stores a record under key for the tenant bound to ctx, through
	// a route.
	Write func(ctx context.Context, key string) error
	// Left reads the server directly and returns how many of ids still
	// have something there; it must find none after offboarding.
	Left func(ctx context.Context, ids []tenancy.ID) (int, error)
}

// Measure runs n fresh tenants' life on b and prints a line per step.
func Measure(t *testing.T, b Backend, n int) {
	t.Helper()
	conc := envInt(t, ConcurrencyEnv, 8)
	ids := make([]tenancy.ID, n)
	for i := range ids {
		ids[i] = tenancytest.FreshTenant(t)
	}
	ctx := context.Background()
	t.Cleanup(func() { b.Tenants.OffboardAll(context.Background(), ids, migrate.Options{Concurrency: conc}) })
	line := func(step string, tenants int, el time.Duration) {
		fmt.Printf("scale lifecycle-%s step=%s tenants=%d concurrency=%d elapsed=%.1fs per_sec=%.0f\n",
			b.Name, step, tenants, conc, el.Seconds(), float64(tenants)/max(el.Seconds(), 1e-9))
	}
	opts := migrate.Options{Concurrency: conc}

	// Onboarding, cut off halfway as a crash would (tenants in flight fail
	// part-way), then rerun over the whole list: the rerun completes it.
	cut, cancel := context.WithCancel(ctx)
	half := opts
	half.Every, half.Progress = n/2, cancelOnWrite(cancel)
	rep := b.Tenants.ProvisionAll(cut, ids, half)
	cancel()
	if rep.Done+len(rep.Failures) < n/2 || rep.Done == n {
		t.Fatalf("interrupted provisioning finished %d of %d tenants, want at least half and not all", rep.Done, n)
	}
	for _, f := range rep.Failures {
		if !errors.Is(f.Err, context.Canceled) {
			// Not the cut: a failure the rerun must complete.
			t.Logf("provisioning %s failed before the cut (the rerun completes it): %v", f.Tenant, f.Err)
		}
	}
	line("provision-interrupted", rep.Done, rep.Elapsed)
	first := rep.Elapsed
	rep = b.Tenants.ProvisionAll(ctx, ids, opts)
	el := rep.Elapsed + retryFailed(t, "provision", rep, line, func(ids []tenancy.ID) migrate.Report { return b.Tenants.ProvisionAll(ctx, ids, opts) })
	line("provision-rerun", n, el)
	line("provision", n, first+el)

	st := time.Now()
	rep = migrate.Each(ctx, "write", ids, opts, func(ctx context.Context, id tenancy.ID, _ *migrate.Recorder) error {
		return b.Write(tenancy.WithTenant(ctx, id), "first")
	})
	requireAll(t, "first writes", rep, n)
	line("first-write", n, time.Since(st))

	st = time.Now()
	b.Tenants.SuspendAll(ids)
	line("suspend-all", n, time.Since(st))
	for _, id := range []tenancy.ID{ids[0], ids[n-1]} {
		if err := b.Write(tenancy.WithTenant(ctx, id), "suspended"); !errors.Is(err, tenancy.CodeTenantSuspended) {
			t.Fatalf("a suspended tenant's write: %v, want tenant_suspended", err)
		}
	}
	st = time.Now()
	b.Tenants.ResumeAll(ids)
	line("resume-all", n, time.Since(st))
	if err := b.Write(tenancy.WithTenant(ctx, ids[0]), "resumed"); err != nil {
		t.Fatalf("a resumed tenant's write: %v", err)
	}

	rep = b.Tenants.OffboardAll(ctx, ids, opts)
	line("offboard", n, rep.Elapsed+retryFailed(t, "offboard", rep, line, func(ids []tenancy.ID) migrate.Report { return b.Tenants.OffboardAll(ctx, ids, opts) }))
	// Teardowns are idempotent: a rerun (after a crash) finds nothing left
	// to remove and succeeds.
	rerun := ids[:max(n/10, 1)]
	rep = b.Tenants.OffboardAll(ctx, rerun, opts)
	requireAll(t, "offboarding rerun", rep, len(rerun))
	line("offboard-rerun", len(rerun), rep.Elapsed)

	st = time.Now()
	left, err := b.Left(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d of %d offboarded tenants still have data on the server", left, n)
	}
	line("verify-nothing-left", n, time.Since(st))
}

// retryFailed reruns the tenants rep reports failed, as the runbook says
// to (a broker under load answers "not available" now and then), up to
// three times, and returns the time it took; a tenant still failing fails
// t.
func retryFailed(t *testing.T, step string, rep migrate.Report, line func(string, int, time.Duration), run func([]tenancy.ID) migrate.Report) time.Duration {
	t.Helper()
	var el time.Duration
	for range 3 {
		if len(rep.Failures) == 0 || rep.Err != nil {
			break
		}
		ids := make([]tenancy.ID, 0, len(rep.Failures))
		for _, f := range rep.Failures {
			t.Logf("%s of %s failed, run again: %v", step, f.Tenant, f.Err)
			ids = append(ids, f.Tenant)
		}
		rep = run(ids)
		el += rep.Elapsed
		line(step+"-retry-failed", len(ids), rep.Elapsed)
	}
	requireAll(t, step, rep, rep.Total)
	return el
}

func requireAll(t *testing.T, what string, rep migrate.Report, n int) {
	t.Helper()
	if rep.Done != n || len(rep.Failures) != 0 || rep.Err != nil {
		first := ""
		if len(rep.Failures) > 0 {
			first = rep.Failures[0].Err.Error()
		}
		t.Fatalf("%s: %d of %d done, %d failed (first: %s), %v", what, rep.Done, n, len(rep.Failures), first, rep.Err)
	}
}

// cancelOnWrite cancels at the first progress line (Every = half the
// tenants): the crash halfway.
type cancelOnWrite context.CancelFunc

func (c cancelOnWrite) Write(p []byte) (int, error) { c(); return len(p), nil }
