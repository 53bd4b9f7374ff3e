package kafka

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// A dial past the limit waits for a connection to close, and past its
// context fails with connection_budget_exhausted naming the module.
func TestConnsLimitWaitsThenRefuses(t *testing.T) {
	pipe := func(context.Context, string, string) (net.Conn, error) {
		c, s := net.Pipe()
		t.Cleanup(func() { _ = s.Close() })
		return c, nil
	}
	cs := newConns(pipe, 1, "m")
	first, err := cs.dialTracked(context.Background(), "tcp", "x")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = cs.dialTracked(ctx, "tcp", "x")
	var e *tenancy.Error
	if tenancy.CodeOf(err) != tenancy.CodeConnectionBudgetExhausted || !errors.As(err, &e) || e.Module != "m" || e.Backend != "kafka" {
		t.Fatalf("second dial over a limit of 1: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		c, err := cs.dialTracked(context.Background(), "tcp", "x")
		if err == nil {
			_ = c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("dial did not wait for the open connection: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	_ = first.Close()
	_ = first.Close() // a second close frees no second slot
	if err := <-done; err != nil {
		t.Fatalf("dial after a close: %v", err)
	}
	if len(cs.slots) != 0 {
		t.Fatalf("%d slots still held with every connection closed", len(cs.slots))
	}
}
