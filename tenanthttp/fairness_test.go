package tenanthttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// TestRatioF1HTTPBoundary: F1-http-boundary, 50 tenants over loopback on
// a handler that holds one of 8 slots of a shared pool for its statement.
// 49 tenants send 10 requests a second each (2 ms statements); in a flood
// phase the 50th sends 50 times that (500 a second) with slow statements
// (20 ms), which alone would want more slots than the pool has. With
// Admission (every tenant: 50 a second, burst 10, 2 in flight) the
// flooder is answered 429 past its limits, and the others' p99 latency in
// the flood phase over their p99 in the phase without it, one ratio per
// round of both phases (in alternating order), is the pair; target 1.5.
// Every request of the other tenants must succeed. The same run without
// Admission is printed as information (F1-http-boundary-unlimited): it is
// what the limiter prevents.
func TestRatioF1HTTPBoundary(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	adm := &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 50, Burst: 10, InFlight: 2}}
	limited := floodRounds(t, adm, 11)
	ratio.ReportRounds(t, "F1", "http-boundary", limited.ratios, 1.5)
	t.Logf("the flooder: %d requests served, %d refused 429 with a limit code, over %d flood phases", limited.floodOK, limited.floodLimited, len(limited.ratios))
	if limited.floodLimited == 0 {
		t.Error("the flooding tenant was never refused")
	}
	unlimited := floodRounds(t, nil, 5)
	r := ratio.FromRounds("F1", "http-boundary-unlimited", unlimited.ratios)
	r.Print(os.Stdout)
	t.Logf("F1-http-boundary-unlimited: median %.3f [%.3f, %.3f] over %d rounds; information: the same run without Admission", r.Median, r.Lo, r.Hi, len(r.Rounds))
}

type floodResult struct {
	ratios                []float64
	floodOK, floodLimited int64
}

// floodRounds runs rounds of a quiet phase and a flood phase (1 s each) on
// a boundary with adm, and returns each round's p99 ratio.
func floodRounds(t *testing.T, adm *tenanthttp.Admission, rounds int) floodResult {
	const (
		others    = 49
		perSecond = 10
		phase     = time.Second
	)
	flooder := tenancy.MustParseID("f1f1f1f1-0000-4000-8000-000000000050")
	pool := make(chan struct{}, 8)
	var srv *tenanthttp.Server
	app := fx.New(fx.NopLogger,
		tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true, Admission: adm}),
		tenanthttp.Route("GET /q", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			stmt := 2 * time.Millisecond
			if id, _ := tenancy.FromContext(r.Context()); id == flooder {
				stmt = 20 * time.Millisecond
			}
			select {
			case pool <- struct{}{}:
			case <-r.Context().Done():
				return
			}
			time.Sleep(stmt)
			<-pool
			_, _ = io.WriteString(w, "ok")
		})),
		fx.Populate(&srv))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	tr := &http.Transport{MaxIdleConnsPerHost: 512, MaxIdleConns: 512}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	url := "http://" + srv.TenantAddr() + "/q"
	send := func(id tenancy.ID) (int, string, error) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("X-Tenant-ID", id.String())
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var body struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(b, &body)
		return resp.StatusCode, body.Code, nil
	}
	ids := make([]tenancy.ID, others)
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("f1f1f1f1-0000-4000-8000-%012x", i+1))
	}
	var res floodResult
	var failed atomic.Value
	// run is one phase: the others' latencies, with the flood or without.
	run := func(flood bool) []time.Duration {
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		stop := time.Now().Add(phase)
		tick := func(every time.Duration, f func()) {
			wg.Go(func() {
				tk := time.NewTicker(every)
				defer tk.Stop()
				for now := range tk.C {
					if now.After(stop) {
						return
					}
					wg.Go(f)
				}
			})
		}
		for _, id := range ids {
			// Staggered starts, so the others do not all send at once.
			time.Sleep(time.Second / perSecond / others)
			tick(time.Second/perSecond, func() {
				began := time.Now()
				st, code, err := send(id)
				if err != nil || st != 200 {
					failed.Store(fmt.Sprintf("tenant %s: %d %s %v", id, st, code, err))
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(began))
				mu.Unlock()
			})
		}
		if flood {
			tick(time.Second/(50*perSecond), func() {
				st, code, err := send(flooder)
				switch {
				case err != nil:
					failed.Store(fmt.Sprintf("flooder: %v", err))
				case st == 200:
					atomic.AddInt64(&res.floodOK, 1)
				case st == 429 && (code == string(tenancy.CodeTenantRateLimited) || code == string(tenancy.CodeTenantConcurrencyLimited)):
					atomic.AddInt64(&res.floodLimited, 1)
				default:
					failed.Store(fmt.Sprintf("flooder: %d %s", st, code))
				}
			})
		}
		wg.Wait()
		return lat
	}
	p99 := func(v []time.Duration) time.Duration {
		slices.Sort(v)
		return v[len(v)*99/100]
	}
	run(false) // warm: connections, state
	for r := range rounds {
		var quiet, flood []time.Duration
		if r%2 == 0 {
			quiet, flood = run(false), run(true)
		} else {
			flood, quiet = run(true), run(false)
		}
		if f := failed.Load(); f != nil {
			t.Fatalf("round %d: %v", r, f)
		}
		qp, fp := p99(quiet), p99(flood)
		t.Logf("round %d: p99 %v without the flood (%d requests), %v with it (%d)", r, qp, len(quiet), fp, len(flood))
		res.ratios = append(res.ratios, float64(fp)/float64(qp))
	}
	return res
}
