package kafka_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/tenancy"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// freePort returns a port nothing listens on (for "broker not there yet").
// startApp starts a built app; it stops on cleanup.
func startApp(t *testing.T, app *fx.App) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
}

// received records what a consumer handled, under which binding.
type received struct {
	mu    sync.Mutex
	by    map[string][]string // tenant (or "global") → values
	where map[string]string   // value → tenant it was handled under
	count map[string]int
}

func newReceived() *received {
	return &received{by: map[string][]string{}, where: map[string]string{}, count: map[string]int{}}
}

func scope(ctx context.Context) string {
	if id, ok := tenancy.FromContext(ctx); ok {
		return id.String()
	}
	if tenancy.IsGlobal(ctx) {
		return "global"
	}
	return "none"
}

func (r *received) handle(ctx context.Context, m kafkago.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, v := scope(ctx), string(m.Value)
	r.by[s] = append(r.by[s], v)
	r.where[v] = s
	r.count[v]++
	return nil
}

// times is how many times value was handled.
func (r *received) times(value string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count[value]
}

// waitFor waits until every value was handled at least once.
func (r *received) waitFor(t *testing.T, values ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.mu.Lock()
		missing := slices.DeleteFunc(slices.Clone(values), func(v string) bool { return r.count[v] > 0 })
		r.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never handled: %v", missing)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *received) scopeOf(v string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.where[v]
}

func (r *received) snapshot() (map[string][]string, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	by := map[string][]string{}
	for k, v := range r.by {
		by[k] = slices.Clone(v)
	}
	count := map[string]int{}
	for k, v := range r.count {
		count[k] = v
	}
	return by, count
}

// rawWriter is a plain kafka-go writer with its own transport, closed on
// cleanup (the default transport's pools would outlive the test).
func rawWriter(t *testing.T, broker string) *kafkago.Writer {
	tr := &kafkago.Transport{}
	w := &kafkago.Writer{Addr: kafkago.TCP(broker), Transport: tr, Balancer: &kafkago.Hash{},
		RequiredAcks: kafkago.RequireAll, BatchTimeout: 5 * time.Millisecond}
	t.Cleanup(func() {
		_ = w.Close()
		tr.CloseIdleConnections()
	})
	return w
}
