package tenantgrpc_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"go.uber.org/fx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantgrpc"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

func as(id tenancy.ID) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), tenantgrpc.DefaultKey, id.String())
}

// wantLimited checks that err is the boundary's admission refusal: status
// ResourceExhausted, the code in its ErrorInfo, and a RetryInfo delay in
// [lo, hi].
func wantLimited(t *testing.T, what string, err error, code tenancy.Code, lo, hi time.Duration) {
	t.Helper()
	if status.Code(err) != codes.ResourceExhausted || tenantgrpc.CodeOf(err) != code {
		t.Fatalf("%s: %v (code %q), want ResourceExhausted %s", what, err, tenantgrpc.CodeOf(err), code)
	}
	if d, ok := tenantgrpc.RetryDelay(err); !ok || d < lo || d > hi {
		t.Fatalf("%s: RetryInfo delay %v (present %v), want within [%v, %v]", what, d, ok, lo, hi)
	}
}

// A tenant over its rate is refused ResourceExhausted with RetryInfo on a
// unary call and on a stream, while another tenant with the same limits
// is served in the same instant; the operator listener is never limited.
func TestAdmissionRateUnaryAndStream(t *testing.T) {
	srv := startApp(t, tenantgrpc.Config{TrustedProxy: true, Admission: &tenanthttp.Admission{
		Default: tenanthttp.Limits{Rate: 0.01, Burst: 2},
	}}, tenantgrpc.Service(&echoDesc, &echo{}, tenantgrpc.Tenant, echoClasses...))
	cc := dial(t, srv.TenantAddr())
	if got, err := callWhoami(as(tenantA), cc); err != nil || got != tenantA.String() {
		t.Fatalf("A's first: %q %v", got, err)
	}
	if _, err := callWatch(as(tenantA), cc); err != nil {
		t.Fatalf("A's stream: %v", err)
	}
	_, err := callWhoami(as(tenantA), cc)
	// An empty bucket at 0.01 a second refills in 100s.
	wantLimited(t, "A's third call", err, tenancy.CodeTenantRateLimited, 99*time.Second, 100*time.Second)
	_, err = callWatch(as(tenantA), cc)
	wantLimited(t, "A's stream over its rate", err, tenancy.CodeTenantRateLimited, 99*time.Second, 100*time.Second)
	if got, err := callWhoami(as(tenantB), cc); err != nil || got != tenantB.String() {
		t.Fatalf("B while A is limited: %q %v", got, err)
	}
	if _, err := callWatch(as(tenantB), cc); err != nil {
		t.Fatalf("B's stream while A is limited: %v", err)
	}
	op := dial(t, srv.OperatorAddr())
	for range 5 {
		if _, err := callUnary(as(tenantA), op, "Reset"); err != nil {
			t.Fatalf("operator method: %v", err)
		}
	}
}

// A stream counts against its tenant's InFlight for its whole life: while
// one of A's streams is open, A's next stream and unary call are refused
// (tenant_concurrency_limited, retry in 1s), B is served, and once the
// stream ends A is served again.
func TestAdmissionInFlightStream(t *testing.T) {
	srv := startApp(t, tenantgrpc.Config{TrustedProxy: true, Admission: &tenanthttp.Admission{
		Default: tenanthttp.Limits{InFlight: 1},
	}}, tenantgrpc.Service(&echoDesc, &echo{}, tenantgrpc.Tenant, echoClasses...))
	cc := dial(t, srv.TenantAddr())
	ctx, cancel := context.WithCancel(as(tenantA))
	defer cancel()
	// Watch waits for the client's first message: until it is sent, the
	// stream stays open on the server.
	held, err := cc.NewStream(ctx, &grpc.StreamDesc{StreamName: "Watch", ServerStreams: true}, "/"+echoName+"/Watch")
	if err != nil {
		t.Fatal(err)
	}
	// The server admits the stream when its headers arrive: until then A's
	// unary calls pass; afterwards every one is refused.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := callWhoami(as(tenantA), cc)
		if err != nil {
			wantLimited(t, "A's call while its stream is open", err, tenancy.CodeTenantConcurrencyLimited, time.Second, time.Second)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("A's calls were never refused while its stream was open")
		}
		time.Sleep(time.Millisecond)
	}
	_, err = callWatch(as(tenantA), cc)
	wantLimited(t, "A's second stream", err, tenancy.CodeTenantConcurrencyLimited, time.Second, time.Second)
	if _, err := callWatch(as(tenantB), cc); err != nil {
		t.Fatalf("B while A's stream is open: %v", err)
	}
	if err := held.SendMsg(wrapperspb.String("")); err != nil {
		t.Fatal(err)
	}
	for {
		if err := held.RecvMsg(new(wrapperspb.StringValue)); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := callWatch(as(tenantA), cc); err != nil {
		t.Fatalf("A after its stream ended: %v", err)
	}
}

// Limits that cannot be enforced refuse the app at fx.New, naming the
// gRPC module.
func TestAdmissionInvalidRefused(t *testing.T) {
	app := fx.New(fx.NopLogger, tenantgrpc.Module(tenantgrpc.Config{TrustedProxy: true,
		Admission: &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 5}}}))
	var e *tenancy.Error
	if err := app.Err(); !errors.As(err, &e) || e.Code != tenancy.CodeTenantLimitsInvalid || e.Module != "tenantgrpc" {
		t.Fatalf("%v, want tenant_limits_invalid from tenantgrpc", err)
	}
}
