package tenantgrpc_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"go.uber.org/fx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
	"github.com/tenantwire/tenantwire/tenantgrpc"
)

// TestUnclassifiedMethodRefused: a method or stream left without a class
// is refused at fx.New with route_unclassified naming it, and nothing
// starts; a class for every method wires.
func TestUnclassifiedMethodRefused(t *testing.T) {
	all := []string{"/tenantwire.test.Echo/Debug", "/tenantwire.test.Echo/Relay", "/tenantwire.test.Echo/Reset",
		"/tenantwire.test.Echo/Watch", "/tenantwire.test.Echo/Whoami"}
	for _, c := range []struct {
		name    string
		class   tenantgrpc.Class
		methods []tenantgrpc.Method
		want    []string
	}{
		{"no class at all", 0, nil, all},
		{"a class out of range", tenantgrpc.Class(9), nil, all},
		{"some methods classified", 0, []tenantgrpc.Method{{Name: "Whoami", Class: tenantgrpc.Tenant}, {Name: "Reset", Class: tenantgrpc.Operator}},
			[]string{"/tenantwire.test.Echo/Debug", "/tenantwire.test.Echo/Relay", "/tenantwire.test.Echo/Watch"}},
		{"a stream left out", 0, []tenantgrpc.Method{{Name: "Whoami", Class: tenantgrpc.Tenant}, {Name: "Relay", Class: tenantgrpc.Tenant},
			{Name: "Reset", Class: tenantgrpc.Operator}, {Name: "Debug", Class: tenantgrpc.Blocked}}, []string{"/tenantwire.test.Echo/Watch"}},
		{"a method entry with no class", tenantgrpc.Tenant, []tenantgrpc.Method{{Name: "Reset"}}, []string{"/tenantwire.test.Echo/Reset"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			started := false
			app := fx.New(fx.NopLogger,
				tenantgrpc.Module(tenantgrpc.Config{TrustedProxy: true, TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0"}),
				tenantgrpc.Service(&echoDesc, &echo{}, c.class, c.methods...),
				fx.Invoke(func(lc fx.Lifecycle) { lc.Append(fx.StartHook(func() { started = true })) }))
			var got []string
			for _, err := range flatten(app.Err()) {
				var e *tenancy.Error
				if !errors.As(err, &e) || e.Code != tenancy.CodeRouteUnclassified || e.Module != "tenantgrpc" || e.Fix == "" {
					t.Fatalf("unexpected refusal: %v", err)
				}
				got = append(got, e.Route)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("unclassified %v, want %v (%v)", got, c.want, app.Err())
			}
			if started {
				t.Fatal("a refused app started")
			}
		})
	}
	tenancytest.RequireWires(t, tenantgrpc.Module(tenantgrpc.Config{TrustedProxy: true}),
		tenantgrpc.Service(&echoDesc, &echo{}, 0, tenantgrpc.Method{Name: "Whoami", Class: tenantgrpc.Tenant},
			tenantgrpc.Method{Name: "Relay", Class: tenantgrpc.Tenant}, tenantgrpc.Method{Name: "Watch", Class: tenantgrpc.Tenant},
			tenantgrpc.Method{Name: "Reset", Class: tenantgrpc.Operator}, tenantgrpc.Method{Name: "Debug", Class: tenantgrpc.Blocked}))
}

// flatten returns the leaves of an error tree (errors.Join, fx's wrapping).
func flatten(err error) []error {
	switch u := err.(type) {
	case nil:
		return nil
	case *tenancy.Error:
		return []error{err}
	case interface{ Unwrap() []error }:
		var out []error
		for _, e := range u.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		return flatten(u.Unwrap())
	}
	return []error{err}
}

type notEchoer struct{}

// TestServiceRefusedAtFxNew: what gRPC's RegisterService would end the
// process for (an implementation of the wrong type, one service twice)
// and what cannot be classified as written are refused at fx.New with
// route_invalid, naming the service or method.
func TestServiceRefusedAtFxNew(t *testing.T) {
	cfg := tenantgrpc.Module(tenantgrpc.Config{TrustedProxy: true})
	noHandlerType := echoDesc
	noHandlerType.HandlerType = nil
	twice := echoDesc
	twice.Streams = append(slices.Clone(twice.Streams), grpc.StreamDesc{StreamName: "Whoami"})
	for _, c := range []struct {
		name, route string
		opts        []fx.Option
	}{
		{"wrong implementation", echoName, []fx.Option{tenantgrpc.Service(&echoDesc, notEchoer{}, tenantgrpc.Tenant)}},
		{"no implementation", echoName, []fx.Option{tenantgrpc.Service(&echoDesc, nil, tenantgrpc.Tenant)}},
		{"registered twice", echoName, []fx.Option{
			tenantgrpc.Service(&echoDesc, &echo{}, tenantgrpc.Tenant), tenantgrpc.Service(&echoDesc, &echo{}, tenantgrpc.Operator)}},
		{"unknown method entry", "/tenantwire.test.Echo/Nope", []fx.Option{
			tenantgrpc.Service(&echoDesc, &echo{}, tenantgrpc.Tenant, tenantgrpc.Method{Name: "Nope", Class: tenantgrpc.Blocked})}},
		{"full name as method entry", "/tenantwire.test.Echo//tenantwire.test.Echo/Reset", []fx.Option{
			tenantgrpc.Service(&echoDesc, &echo{}, tenantgrpc.Tenant, tenantgrpc.Method{Name: "/tenantwire.test.Echo/Reset", Class: tenantgrpc.Operator})}},
		{"method entry twice", "/tenantwire.test.Echo/Reset", []fx.Option{
			tenantgrpc.Service(&echoDesc, &echo{}, tenantgrpc.Tenant, tenantgrpc.Method{Name: "Reset", Class: tenantgrpc.Operator},
				tenantgrpc.Method{Name: "Reset", Class: tenantgrpc.Tenant})}},
		{"method declared twice", "/tenantwire.test.Echo/Whoami", []fx.Option{tenantgrpc.Service(&twice, &echo{}, tenantgrpc.Tenant)}},
		{"no handler type", echoName, []fx.Option{tenantgrpc.Service(&noHandlerType, &echo{}, tenantgrpc.Tenant)}},
		{"no descriptor", "", []fx.Option{tenantgrpc.Service(nil, &echo{}, tenantgrpc.Tenant)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tenancytest.RequireRefusedRoute(t, tenancy.CodeRouteInvalid, "tenantgrpc", c.route, append([]fx.Option{cfg}, c.opts...)...)
		})
	}
	// A service whose every method is blocked serves nothing and needs no
	// implementation.
	tenancytest.RequireWires(t, cfg, tenantgrpc.Service(&echoDesc, nil, tenantgrpc.Blocked))
}

// TestOperatorMethodsOnlyOnOperatorListener, over loopback: operator
// methods (a method of a mixed service, and gRPC's health service) are
// Unimplemented on the tenant listener whatever the call carries, and
// served on the operator listener with no tenant bound; tenant methods are
// Unimplemented on the operator listener; blocked ones on both. A handler
// for unregistered methods (grpc.UnknownServiceHandler) in the options
// never answers for any of them.
func TestOperatorMethodsOnlyOnOperatorListener(t *testing.T) {
	var unknown atomic.Int64
	catchAll := grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
		unknown.Add(1)
		return nil
	})
	e := &echo{}
	hs := health.NewServer()
	srv := startApp(t, tenantgrpc.Config{
		TrustedProxy:          true,
		ServerOptions:         []grpc.ServerOption{catchAll},
		OperatorServerOptions: []grpc.ServerOption{catchAll},
	},
		tenantgrpc.Service(&echoDesc, e, tenantgrpc.Tenant, echoClasses...),
		tenantgrpc.Service(&healthpb.Health_ServiceDesc, hs, tenantgrpc.Operator),
	)
	tenantCC, operatorCC := dial(t, srv.TenantAddr()), dial(t, srv.OperatorAddr())
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-tenant-id", tenantA.String())
	serving := func(cc *grpc.ClientConn) error {
		resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		if err == nil && resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health: %v", resp.GetStatus())
		}
		return err
	}
	unimplemented := func(what string, err error) {
		t.Helper()
		if status.Code(err) != codes.Unimplemented {
			t.Errorf("%s: %v, want Unimplemented", what, err)
		}
	}

	if got, err := callWhoami(ctx, tenantCC); err != nil || got != tenantA.String() {
		t.Errorf("tenant Whoami on the tenant listener: %q %v", got, err)
	}
	before := e.calls.Load()
	_, err := callUnary(ctx, tenantCC, "Reset")
	unimplemented("operator Reset on the tenant listener", err)
	unimplemented("operator health on the tenant listener", serving(tenantCC))
	_, err = callUnary(ctx, tenantCC, "Debug")
	unimplemented("blocked Debug on the tenant listener", err)
	_, err = callUnary(ctx, tenantCC, "Nope")
	unimplemented("unknown method on the tenant listener", err)
	if n := e.calls.Load() - before; n != 0 {
		t.Errorf("%d handler runs for methods the tenant listener must not serve", n)
	}

	if got, err := callUnary(ctx, operatorCC, "Reset"); err != nil || got != "reset unbound" {
		t.Errorf("operator Reset on the operator listener: %q %v (want served, no tenant bound)", got, err)
	}
	if err := serving(operatorCC); err != nil {
		t.Errorf("operator health on the operator listener: %v", err)
	}
	before = e.calls.Load()
	_, err = callWhoami(ctx, operatorCC)
	unimplemented("tenant Whoami on the operator listener", err)
	_, err = callWatch(ctx, operatorCC)
	unimplemented("tenant Watch on the operator listener", err)
	_, err = callUnary(ctx, operatorCC, "Debug")
	unimplemented("blocked Debug on the operator listener", err)
	if n := e.calls.Load() - before; n != 0 {
		t.Errorf("%d handler runs for methods the operator listener must not serve", n)
	}
	if n := unknown.Load(); n != 0 {
		t.Errorf("the unknown-service handler answered %d calls", n)
	}
	for full, want := range map[string]tenantgrpc.Class{
		"/tenantwire.test.Echo/Whoami": tenantgrpc.Tenant, "/tenantwire.test.Echo/Watch": tenantgrpc.Tenant,
		"/tenantwire.test.Echo/Reset": tenantgrpc.Operator, "/tenantwire.test.Echo/Debug": tenantgrpc.Blocked,
		"/grpc.health.v1.Health/Check": tenantgrpc.Operator, "/grpc.health.v1.Health/Watch": tenantgrpc.Operator,
		"/tenantwire.test.Echo/Nope": 0,
	} {
		if got := srv.Class(full); got != want {
			t.Errorf("Class(%s) = %v, want %v", full, got, want)
		}
	}
	hs.Shutdown()
}
