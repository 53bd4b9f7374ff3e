package tenantgrpc_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantgrpc"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// hops is a second gRPC server and an HTTP server, both requiring a
// tenant, and a client to each that carries the bound tenant.
type hops struct {
	grpcNext *echo
	httpHits *atomic.Int64
	cc       *grpc.ClientConn // to the second gRPC server, through Outgoing
	httpURL  string
	http     *http.Client // through tenanthttp.Transport
}

func startHops(t *testing.T) hops {
	t.Helper()
	h := hops{grpcNext: &echo{}, httpHits: new(atomic.Int64)}
	second := startApp(t, tenantgrpc.Config{TrustedProxy: true, RequireTenant: true},
		tenantgrpc.Service(&echoDesc, h.grpcNext, tenantgrpc.Tenant, echoClasses...))
	out, err := tenantgrpc.NewOutgoing("")
	if err != nil {
		t.Fatal(err)
	}
	h.cc = dial(t, second.TenantAddr(), out.DialOptions()...)

	res, err := tenanthttp.NewResolver(tenanthttp.Config{TrustedProxy: true, RequireTenant: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(res.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.httpHits.Add(1)
		id, _ := tenancy.FromContext(r.Context())
		_, _ = io.WriteString(w, id.String())
	})))
	t.Cleanup(srv.Close)
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	h.httpURL, h.http = srv.URL, &http.Client{Transport: &tenanthttp.Transport{Base: base}}
	return h
}

// TestOutgoingCarriesTenantEndToEnd: a client names a tenant to the first
// server; its handler calls a second gRPC server (unary and stream,
// through the client interceptors) and an HTTP server (through
// tenanthttp.Transport) under the context the boundary bound; both
// require a tenant and both see the client's.
func TestOutgoingCarriesTenantEndToEnd(t *testing.T) {
	h := startHops(t)
	first := startApp(t, tenantgrpc.Config{TrustedProxy: true},
		tenantgrpc.Service(&echoDesc, &echo{next: h.cc, httpNext: h.httpURL, http: h.http}, tenantgrpc.Tenant, echoClasses...))
	cc := dial(t, first.TenantAddr())
	for _, id := range []tenancy.ID{tenantA, tenantB, tenancy.Default} {
		ctx := context.Background()
		if id != tenancy.Default {
			ctx = metadata.AppendToOutgoingContext(ctx, "x-tenant-id", id.String())
		}
		got, err := callUnary(ctx, cc, "Relay")
		want := "grpc=" + id.String() + " stream=" + id.String() + "," + id.String() + " http=" + id.String()
		if err != nil || got != want {
			t.Errorf("relay for %v: %q %v; want %q", id, got, err, want)
		}
	}
}

// TestOutgoingRefusesUnbound: a call with no tenant bound is refused
// before it is sent (tenant_unbound, FailedPrecondition), unary and
// stream; a tenant-global call (context marker or call option) leaves
// with no tenant, so the second server, which requires one, refuses it;
// a tenant set by hand that is not the bound one is refused
// (tenant_source_conflict) and the same one set by hand leaves once.
func TestOutgoingRefusesUnbound(t *testing.T) {
	h := startHops(t)
	next := h.grpcNext
	bound := tenancy.WithTenant(context.Background(), tenantA)

	before := next.calls.Load()
	_, err := callWhoami(context.Background(), h.cc)
	if status.Code(err) != codes.FailedPrecondition || tenantgrpc.CodeOf(err) != tenancy.CodeTenantUnbound || !errors.Is(err, tenancy.CodeTenantUnbound) {
		t.Errorf("unbound unary: %v", err)
	}
	var coded *tenancy.Error
	if !errors.As(err, &coded) || coded.Fix == "" {
		t.Errorf("unbound unary: no *tenancy.Error with a fix in %v", err)
	}
	_, err = callWatch(context.Background(), h.cc)
	if status.Code(err) != codes.FailedPrecondition || tenantgrpc.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Errorf("unbound stream: %v", err)
	}
	// A value set by hand does not stand in for a bound tenant.
	_, err = callWhoami(metadata.AppendToOutgoingContext(context.Background(), "x-tenant-id", tenantA.String()), h.cc)
	if tenantgrpc.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Errorf("unbound with the key set by hand: %v", err)
	}
	_, err = callWhoami(metadata.AppendToOutgoingContext(bound, "x-tenant-id", tenantB.String()), h.cc)
	if status.Code(err) != codes.PermissionDenied || tenantgrpc.CodeOf(err) != tenancy.CodeTenantSourceConflict {
		t.Errorf("another tenant set by hand: %v", err)
	}
	_, err = callWatch(metadata.AppendToOutgoingContext(bound, "x-tenant-id", tenantB.String()), h.cc)
	if tenantgrpc.CodeOf(err) != tenancy.CodeTenantSourceConflict {
		t.Errorf("another tenant set by hand, stream: %v", err)
	}
	if n := next.calls.Load() - before; n != 0 {
		t.Errorf("%d refused calls reached the server", n)
	}

	// Tenant-global calls leave with no tenant, even from a bound context:
	// the second server requires one and answers tenant_required.
	for name, call := range map[string]func() error{
		"context marker": func() error { _, err := callWhoami(tenancy.WithGlobal(context.Background()), h.cc); return err },
		"context marker over a bound one": func() error {
			_, err := callWhoami(tenancy.WithGlobal(bound), h.cc)
			return err
		},
		"call option":         func() error { _, err := callWhoami(bound, h.cc, tenantgrpc.Global()); return err },
		"call option, stream": func() error { _, err := callWatch(bound, h.cc, tenantgrpc.Global()); return err },
	} {
		if err := call(); status.Code(err) != codes.InvalidArgument || tenantgrpc.CodeOf(err) != tenancy.CodeTenantRequired {
			t.Errorf("global, %s: %v; want the second server's tenant_required", name, err)
		}
	}
	_, err = callWhoami(metadata.AppendToOutgoingContext(context.Background(), "x-tenant-id", tenantA.String()), h.cc, tenantgrpc.Global())
	if tenantgrpc.CodeOf(err) != tenancy.CodeTenantSourceConflict {
		t.Errorf("global with a tenant set by hand: %v", err)
	}

	// The same tenant set by hand (in any spelling of the key) leaves
	// once: two values would be refused by the second server.
	for _, key := range []string{"x-tenant-id", "X-Tenant-ID"} {
		ctx := metadata.AppendToOutgoingContext(bound, key, strings.ToUpper(tenantA.String()))
		if got, err := callWhoami(ctx, h.cc); err != nil || got != tenantA.String() {
			t.Errorf("same tenant set by hand under %q: %q %v", key, got, err)
		}
	}
	if got, err := callWhoami(bound, h.cc); err != nil || got != tenantA.String() {
		t.Errorf("bound: %q %v", got, err)
	}
}
