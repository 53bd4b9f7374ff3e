package tenantgrpc_test

import (
	"context"
	"fmt"
	"net/http"
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

// mdTrap is a context that counts every lookup answering the incoming
// metadata: the claim-only boundary must never make one.
type mdTrap struct {
	context.Context
	reads *atomic.Int64
}

func (c mdTrap) Value(k any) any {
	v := c.Context.Value(k)
	if _, ok := v.(metadata.MD); ok {
		c.reads.Add(1)
	}
	return v
}

// TestClaimOnlyNeverReadsMetadata: with KeyOff and a claim, the tenant is
// the claim's, whatever tenant the client's own metadata names under the
// key (in any spelling), and the resolver never reads the incoming
// metadata at all: not on Resolve, not over a real call.
func TestClaimOnlyNeverReadsMetadata(t *testing.T) {
	cfg := tenantgrpc.Config{KeyOff: true, Claim: claimFrom}
	res, err := tenantgrpc.NewResolver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	md := metadata.Pairs("x-tenant-id", tenantB.String(), "X-Tenant-ID", tenantB.String())
	claimed := context.WithValue(metadata.NewIncomingContext(context.Background(), md), claimKey{}, tenantA)
	if id, err := res.Resolve(mdTrap{claimed, &reads}); err != nil || id != tenantA {
		t.Errorf("claim A, metadata B: %s %v, want A", id, err)
	}
	if id, err := res.Resolve(mdTrap{metadata.NewIncomingContext(context.Background(), md), &reads}); err != nil || id != tenancy.Default {
		t.Errorf("no claim, metadata B: %s %v, want the default tenant", id, err)
	}
	if n := reads.Swap(0); n != 0 {
		t.Errorf("Resolve read the incoming metadata %d times", n)
	}

	// Over loopback: the trap wraps each call's context right after
	// authentication, so the boundary's own interceptors run under it.
	trap := grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(mdTrap{ctx, &reads}, req)
	})
	cfg.ServerOptions = append(authOptions(), trap)
	e := &echo{}
	srv := startApp(t, cfg, tenantgrpc.Service(&echoDesc, e, tenantgrpc.Tenant, echoClasses...))
	cc := dial(t, srv.TenantAddr())
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tenantA.String(), "x-tenant-id", tenantB.String())
	if got, err := callWhoami(ctx, cc); err != nil || got != tenantA.String() {
		t.Errorf("claim A, metadata B over a call: %q %v, want A", got, err)
	}
	if got, err := callWhoami(metadata.AppendToOutgoingContext(context.Background(), "x-tenant-id", tenantB.String()), cc); err != nil || got != tenancy.Default.String() {
		t.Errorf("no claim, metadata B over a call: %q %v, want the default tenant", got, err)
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("the claim-only boundary read the incoming metadata %d times", n)
	}
}

// TestStatusIsTheHTTPTable: every code's gRPC status is the HTTP
// boundary's status in gRPC terms, and the status a handler returns names
// the code but never the error's module, backend, route or detail.
func TestStatusIsTheHTTPTable(t *testing.T) {
	equiv := map[int][]codes.Code{
		http.StatusBadRequest:          {codes.InvalidArgument},
		http.StatusForbidden:           {codes.PermissionDenied},
		http.StatusConflict:            {codes.FailedPrecondition},
		http.StatusServiceUnavailable:  {codes.Unavailable},
		http.StatusInternalServerError: {codes.Internal, codes.FailedPrecondition},
	}
	for _, c := range []tenancy.Code{
		tenancy.CodeInvalidTenantHeader, tenancy.CodeTenantRequired, tenancy.CodeTenantHostAmbiguous, tenancy.CodeTenantSourceConflict,
		tenancy.CodeForeignTenant, tenancy.CodeTenantSuspended, tenancy.CodeTenantNotProvisioned, tenancy.CodeConnectionBudgetExhausted,
		tenancy.CodeTenantMigrationBehind, tenancy.CodeTenantRegistryUnavailable, tenancy.CodeTenantUnbound, tenancy.CodeTenantSourceInvalid,
		tenancy.CodeTenantIDInvalid, tenancy.CodeOperatorRequestInvalid, tenancy.CodeWiringInvalid, tenancy.ValidationFailed("postgres"),
	} {
		err := &tenancy.Error{Code: c, Module: "billing_pg", Backend: "postgres", Route: "invoices_by_tenant",
			Detail: "schema t_secret_orders", Fix: "run tenantadmin provision"}
		st := tenantgrpc.Status(err)
		hs := tenanthttp.StatusOf(err)
		ok := false
		for _, g := range equiv[hs] {
			ok = ok || g == st.Code() && g == tenantgrpc.StatusCode(c)
		}
		if !ok {
			t.Errorf("%s: gRPC %s, HTTP %d", c, st.Code(), hs)
		}
		if hs == http.StatusInternalServerError && st.Code() == codes.Internal {
			if tenantgrpc.CodeOf(status.ErrorProto(st.Proto())) != "" {
				t.Errorf("%s: an internal status names a code", c)
			}
		} else if got := tenantgrpc.CodeOf(st.Err()); got != c || !strings.HasPrefix(st.Message(), string(c)+": ") {
			t.Errorf("%s: status %q reads as %q", c, st.Message(), got)
		}
		text := st.Message()
		for _, d := range st.Details() {
			text += " " + fmt.Sprint(d)
		}
		for _, secret := range []string{"billing_pg", "postgres", "invoices", "t_secret", "tenantadmin"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s: the status %q names %q", c, text, secret)
			}
		}
	}
}
