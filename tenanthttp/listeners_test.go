package tenanthttp_test

import (
	"errors"
	"log/slog"
	"net"
	"testing"

	"github.com/tenantwire/tenantwire/tenanthttp"
)

// Listeners opens both listeners or neither: when the operator address is
// taken the tenant listener is closed again, so its port is free for a
// retry. Once open, a listener whose serve fails is waited for.
func TestListenersOpenBothOrNeither(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tenantAddr := free.Addr().String()
	_ = free.Close()

	var l tenanthttp.Listeners
	if _, _, err := l.Open("t", slog.New(slog.DiscardHandler), tenantAddr, taken.Addr().String()); err == nil {
		t.Fatal("opened with the operator address taken")
	}
	if l.TenantAddr() != "" || l.OperatorAddr() != "" {
		t.Fatalf("a failed open reports addresses %q %q", l.TenantAddr(), l.OperatorAddr())
	}
	again, err := net.Listen("tcp", tenantAddr)
	if err != nil {
		t.Fatalf("the failed open still holds the tenant port: %v", err)
	}
	_ = again.Close()

	tl, ol, err := l.Open("t", slog.New(slog.DiscardHandler), tenantAddr, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if l.TenantAddr() != tl.Addr().String() || l.OperatorAddr() != ol.Addr().String() {
		t.Fatalf("addresses %q %q, listeners on %v %v", l.TenantAddr(), l.OperatorAddr(), tl.Addr(), ol.Addr())
	}
	done := make(chan struct{})
	l.Serve("tenant", func() error { <-done; return errors.New("stopped") })
	l.Serve("operator", func() error { return nil })
	_ = tl.Close()
	_ = ol.Close()
	close(done)
	l.Wait()
}
