package soak_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// load is the traffic: a fixed number of workers, each owning some
// tenants and writing their sequence numbers in order, one request at a
// time. A failed request is retried until it is acknowledged, so every
// tenant's acknowledged sequence numbers are exactly 1..acked.
type load struct {
	url     string
	client  *http.Client
	tenants []tenancy.ID
	workers int
	pace    time.Duration // pause between a worker's requests

	mu    sync.Mutex
	acked map[tenancy.ID]int
	ackAt map[tenancy.ID][]int64 // ackAt[t][seq-1], Unix nanoseconds (small next to the heap the soak measures)

	ok, failed atomic.Int64
	// failedBy and ackedBy count requests by serverOf(tenant).
	serverOf          func(tenancy.ID) int
	failedBy, ackedBy [2]atomic.Int64
	lastErr           atomic.Value // string
	onAck             func(time.Time)
}

func newLoad(url string, tenants []tenancy.ID, workers int, pace time.Duration, serverOf func(tenancy.ID) int) *load {
	return &load{url: url, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}, Timeout: 10 * time.Second},
		tenants: tenants, workers: workers, pace: pace, serverOf: serverOf,
		acked: map[tenancy.ID]int{}, ackAt: map[tenancy.ID][]int64{}}
}

// run sends until ctx ends, then finishes the requests in flight (retrying
// them until acknowledged, at most until hard ends).
func (l *load) run(ctx, hard context.Context) {
	var wg sync.WaitGroup
	for w := range l.workers {
		wg.Go(func() {
			var own []tenancy.ID
			for i := w; i < len(l.tenants); i += l.workers {
				own = append(own, l.tenants[i])
			}
			for n := 0; ctx.Err() == nil && len(own) > 0; n++ {
				tenant := own[n%len(own)]
				l.mu.Lock()
				seq := l.acked[tenant] + 1
				l.mu.Unlock()
				if !l.send(hard, tenant, seq) {
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(l.pace):
				}
			}
		})
	}
	wg.Wait()
	l.client.Transport.(*http.Transport).CloseIdleConnections()
}

// send retries one request until it is acknowledged; false when hard ended
// first (the request is then neither counted nor checked).
func (l *load) send(hard context.Context, tenant tenancy.ID, seq int) bool {
	for {
		err := l.post(hard, tenant, seq)
		if err == nil {
			now := time.Now()
			l.ok.Add(1)
			l.ackedBy[l.serverOf(tenant)].Add(1)
			l.mu.Lock()
			l.acked[tenant] = seq
			l.ackAt[tenant] = append(l.ackAt[tenant], now.UnixNano())
			l.mu.Unlock()
			if l.onAck != nil {
				l.onAck(now)
			}
			return true
		}
		l.failed.Add(1)
		l.failedBy[l.serverOf(tenant)].Add(1)
		l.lastErr.Store(err.Error())
		select {
		case <-hard.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (l *load) post(ctx context.Context, tenant tenancy.ID, seq int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/orders/%d", l.url, seq), nil)
	if err != nil {
		return err
	}
	req.Header.Set(tenanthttp.DefaultHeader, tenant.String())
	resp, err := l.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("%d %s", resp.StatusCode, b)
	}
	return nil
}

func (l *load) sent() map[tenancy.ID]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[tenancy.ID]int, len(l.tenants))
	for _, t := range l.tenants {
		out[t] = l.acked[t]
	}
	return out
}

// ackedAt is when (tenant, seq) was acknowledged.
func (l *load) ackedAt(tenant tenancy.ID, seq int) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.ackAt[tenant]; seq >= 1 && seq <= len(a) {
		return time.Unix(0, a[seq-1])
	}
	return time.Time{}
}
