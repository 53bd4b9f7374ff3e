package tenantgrpc_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"go.uber.org/fx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
	"github.com/tenantwire/tenantwire/tenantgrpc"
)

// holder is a service whose one method blocks until its call ends, or
// until it is released.
type holder interface{ hold(context.Context) }

type hold struct {
	started chan struct{}
	release chan struct{}
}

func (h *hold) hold(ctx context.Context) {
	h.started <- struct{}{}
	select {
	case <-ctx.Done():
	case <-h.release:
	}
}

var holdDesc = grpc.ServiceDesc{
	ServiceName: "tenantwire.test.Hold",
	HandlerType: (*holder)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Hold", Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, _ any) (any, error) { srv.(holder).hold(ctx); return in, nil }
		return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/tenantwire.test.Hold/Hold"}, h)
	}}},
}

// TestStopDrainsThenCuts: OnStop lets a running call finish (graceful),
// and when the stop deadline passes with a call still running it cuts the
// call and returns the deadline's error; either way the listeners are
// closed and, as TestMain checks, no goroutine is left.
func TestStopDrainsThenCuts(t *testing.T) {
	for _, finish := range []bool{true, false} {
		h := &hold{started: make(chan struct{}, 1), release: make(chan struct{})}
		var srv *tenantgrpc.Server
		app := fx.New(fx.NopLogger,
			tenantgrpc.Module(tenantgrpc.Config{TrustedProxy: true, TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0"}),
			tenantgrpc.Service(&holdDesc, h, tenantgrpc.Tenant), fx.Populate(&srv))
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		cc := dial(t, srv.TenantAddr())
		callErr := make(chan error, 1)
		go func() {
			callErr <- cc.Invoke(context.Background(), "/tenantwire.test.Hold/Hold", wrapperspb.String(""), new(wrapperspb.StringValue))
		}()
		<-h.started
		stopped := make(chan error, 1)
		// Draining has all the time it needs; cutting waits a short deadline.
		deadline := 300 * time.Millisecond
		if finish {
			deadline = 10 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		go func() { stopped <- app.Stop(ctx) }()
		if finish {
			time.Sleep(50 * time.Millisecond) // stop is draining
			close(h.release)
			if err := <-stopped; err != nil {
				t.Errorf("graceful stop: %v", err)
			}
			if err := <-callErr; err != nil {
				t.Errorf("the running call was not let finish: %v", err)
			}
		} else {
			if err := <-stopped; !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("stop past its deadline: %v", err)
			}
			if err := <-callErr; status.Code(err) == codes.OK {
				t.Errorf("the hanging call was not cut")
			}
		}
		cancel()
		for _, addr := range []string{srv.TenantAddr(), srv.OperatorAddr()} {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Errorf("%s still accepts connections after stop", addr)
			}
		}
	}
}

// TestRefusedDuringFxNew: a refused app opens no listener and builds no
// server, and its refusal is found through fx's wrapping.
func TestRefusedDuringFxNew(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	app := fx.New(fx.NopLogger, tenantgrpc.Module(tenantgrpc.Config{TenantAddr: addr}))
	var coded *tenancy.Error
	if !errors.As(app.Err(), &coded) || coded.Code != tenancy.CodeTrustedProxyRequired {
		t.Fatalf("got %v", app.Err())
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("a refused app listens")
	}
	tenancytest.RequireRefused(t, tenancy.CodeTrustedProxyRequired, tenantgrpc.Module(tenantgrpc.Config{}))
}
