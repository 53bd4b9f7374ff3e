package tenancytest_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancytest"
)

// logRecorder is a testing.TB that records what is logged and whether it
// failed, instead of writing to the test's output.
type logRecorder struct {
	testing.TB
	mu     sync.Mutex
	logged []string
	failed bool
}

func (r *logRecorder) Helper() {}
func (r *logRecorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logged = append(r.logged, fmt.Sprintf(format, args...))
}
func (r *logRecorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	runtime.Goexit()
}

func requireWires(t *testing.T, opts ...fx.Option) *logRecorder {
	r := &logRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tenancytest.RequireWires(r, opts...)
	}()
	<-done
	return r
}

type optionalLogger struct {
	fx.In
	Logger *slog.Logger `optional:"true"`
}

// chatty is a component that logs at construction through the app's
// logger, or slog.Default() when the app provides none, as the
// boundaries' boot lines do.
func chatty(refuse bool) fx.Option {
	return fx.Invoke(func(p optionalLogger) error {
		log := p.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Info("chatty: booted", "k", "v")
		if refuse {
			return fmt.Errorf("refused")
		}
		return nil
	})
}

// RequireWires prints nothing of the app's log when the wiring passes,
// whether the app provides a logger (even one it decorates) or not, and
// hands the lines to t.Log when it is refused.
func TestRequireWiresSilencesTheAppLogger(t *testing.T) {
	var own bytes.Buffer
	withOwn := []fx.Option{fx.Supply(slog.New(slog.NewTextHandler(&own, nil))),
		fx.Decorate(func(l *slog.Logger) *slog.Logger { return l.With("app", "x") })}
	for _, opts := range [][]fx.Option{nil, withOwn} {
		own.Reset()
		r := requireWires(t, append(opts, chatty(false))...)
		if r.failed || len(r.logged) != 0 || own.Len() != 0 {
			t.Fatalf("a passing wiring: failed %v, logged %q, app log %q", r.failed, r.logged, own.String())
		}
		r = requireWires(t, append(opts, chatty(true))...)
		if !r.failed || len(r.logged) != 1 || !strings.Contains(r.logged[0], "chatty: booted") || own.Len() != 0 {
			t.Fatalf("a refused wiring: failed %v, logged %q, app log %q", r.failed, r.logged, own.String())
		}
	}
	// A component requiring a logger the app does not provide is refused,
	// as fx.New refuses it.
	if r := requireWires(t, fx.Invoke(func(*slog.Logger) {})); !r.failed {
		t.Fatal("a missing required logger was accepted")
	}
}
