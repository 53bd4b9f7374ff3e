package shards_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func TestWorkerConfigCheck(t *testing.T) {
	if bad := (shards.WorkerConfig{}).Check("x.Config", "w", shards.Count("Batch", 0), shards.Duration("Idle", 0)); len(bad) != 0 {
		t.Fatalf("zero values refused: %v", bad)
	}
	bad := shards.WorkerConfig{Backoff: -time.Second}.Check("x.Config", "w", shards.Count("Batch", int64(-2)))
	if len(bad) != 2 {
		t.Fatalf("problems %v, want Backoff and Batch", bad)
	}
	if bad[0].Detail != "worker w: Backoff must not be negative" || bad[0].Fix != "set x.Config.Backoff to 0 (its default) or a positive duration, not -1s" {
		t.Fatalf("%+v", bad[0])
	}
	if bad[1].Fix != "set x.Config.Batch to 0 (its default) or a positive count, not -2" {
		t.Fatalf("%+v", bad[1])
	}
}

func TestWorkerConfigBackoffAndReport(t *testing.T) {
	c := shards.WorkerConfig{Backoff: 10 * time.Millisecond, MaxBackoff: 35 * time.Millisecond}.WithDefaults()
	var waits []time.Duration
	for w, i := time.Duration(0), 0; i < 4; i++ {
		w = c.NextBackoff(w)
		waits = append(waits, w)
	}
	ms := time.Millisecond
	if want := []time.Duration{10 * ms, 20 * ms, 35 * ms, 35 * ms}; !slices.Equal(waits, want) {
		t.Fatalf("backoffs %v", waits)
	}
	var buf bytes.Buffer
	c.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	c.Report(tenancy.WithTenant(context.Background(), tenancytest.TenantA), "failed", errors.New("boom"), "wait", time.Second)
	if line := buf.String(); !strings.Contains(line, "tenant="+tenancytest.TenantA.String()) || !strings.Contains(line, "wait=1s error=boom") {
		t.Fatalf("logged %q", line)
	}
	var got error
	c.OnError = func(err error) { got = err }
	buf.Reset()
	c.Report(context.Background(), "failed", errors.New("boom"))
	if got == nil || buf.Len() != 0 {
		t.Fatalf("OnError got %v, logged %q", got, buf.String())
	}
}
