package tenantgrpc_test

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/fx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantgrpc"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// whoamiServer is a service written without protoc: one method answering
// the tenant bound to the call.
type whoamiServer struct{}

func (whoamiServer) whoami(ctx context.Context) string {
	id, err := tenancy.Require(ctx) // the boundary bound it; adapters read it the same way
	if err != nil {
		return err.Error()
	}
	return id.String()
}

var whoamiDesc = grpc.ServiceDesc{
	ServiceName: "example.Whoami",
	HandlerType: (*interface{ whoami(context.Context) string })(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Get", Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, _ any) (any, error) {
			return wrapperspb.String(srv.(whoamiServer).whoami(ctx)), nil
		}
		return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/example.Whoami/Get"}, h)
	}}},
}

// The boundary resolves the tenant of each call once, from the x-tenant-id
// metadata key that a trusted proxy sets, and binds it into the handler's
// context. A malformed tenant is InvalidArgument with an ErrorInfo naming
// the code.
func Example() {
	var srv *tenantgrpc.Server
	app := fx.New(fx.NopLogger,
		tenantgrpc.Module(tenantgrpc.Config{
			TenantAddr:   "127.0.0.1:0",
			OperatorAddr: "127.0.0.1:0",
			// A proxy in front sets x-tenant-id and strips the client's;
			// metadata mode refuses to boot without this assertion.
			TrustedProxy: true,
		}),
		tenantgrpc.Service(&whoamiDesc, whoamiServer{}, tenantgrpc.Tenant),
		fx.Populate(&srv),
	)
	if err := app.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = app.Stop(context.Background()) }()
	cc, err := grpc.NewClient(srv.TenantAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cc.Close()
	for _, tenant := range []string{"7c9e6679-7425-40de-944b-e07fc1f90ae7", "", "not-a-uuid"} {
		ctx := context.Background()
		if tenant != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, tenantgrpc.DefaultKey, tenant)
		}
		out := new(wrapperspb.StringValue)
		if err := cc.Invoke(ctx, "/example.Whoami/Get", wrapperspb.String(""), out); err != nil {
			fmt.Println(status.Code(err), tenantgrpc.CodeOf(err))
			continue
		}
		fmt.Println("tenant", out.GetValue())
	}
	// Output:
	// tenant 7c9e6679-7425-40de-944b-e07fc1f90ae7
	// tenant 00000000-0000-0000-0000-000000000001
	// InvalidArgument invalid_tenant_header
}

// Outgoing calls carry the tenant bound to their context; a call with none
// bound is refused before anything is sent, unless it is marked
// tenant-global.
func ExampleNewOutgoing() {
	out, err := tenantgrpc.NewOutgoing("")
	if err != nil {
		fmt.Println(err)
		return
	}
	cc, err := grpc.NewClient("127.0.0.1:1", append(out.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cc.Close()
	err = cc.Invoke(context.Background(), "/example.Whoami/Get", wrapperspb.String(""), new(wrapperspb.StringValue))
	fmt.Println(status.Code(err), tenantgrpc.CodeOf(err))
	// Output:
	// FailedPrecondition tenant_unbound
}

// Metadata mode without a trusted proxy is refused during fx.New: any
// client could name any tenant.
func ExampleModule_untrustedKey() {
	app := fx.New(fx.NopLogger, tenantgrpc.Module(tenantgrpc.Config{}))
	fmt.Println(tenancy.CodeOf(app.Err()))
	// Output:
	// trusted_proxy_required
}

// Admission limits each tenant's calls: here two at once and one every
// hundred seconds after that. A tenant's third call is ResourceExhausted
// with the code and a RetryInfo; another tenant is served.
func ExampleConfig_admission() {
	var srv *tenantgrpc.Server
	app := fx.New(fx.NopLogger,
		tenantgrpc.Module(tenantgrpc.Config{
			TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true,
			Admission: &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 0.01, Burst: 2}},
		}),
		tenantgrpc.Service(&whoamiDesc, whoamiServer{}, tenantgrpc.Tenant),
		fx.Populate(&srv),
	)
	if err := app.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = app.Stop(context.Background()) }()
	cc, err := grpc.NewClient(srv.TenantAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cc.Close()
	for _, tenant := range []string{"7c9e6679-7425-40de-944b-e07fc1f90ae7", "7c9e6679-7425-40de-944b-e07fc1f90ae7",
		"7c9e6679-7425-40de-944b-e07fc1f90ae7", "3f2504e0-4f89-41d3-9a0c-0305e82c3301"} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), tenantgrpc.DefaultKey, tenant)
		out := new(wrapperspb.StringValue)
		if err := cc.Invoke(ctx, "/example.Whoami/Get", wrapperspb.String(""), out); err != nil {
			delay, _ := tenantgrpc.RetryDelay(err)
			fmt.Println(status.Code(err), tenantgrpc.CodeOf(err), "retry in", delay.Round(time.Second))
			continue
		}
		fmt.Println("tenant", out.GetValue())
	}
	// Output:
	// tenant 7c9e6679-7425-40de-944b-e07fc1f90ae7
	// tenant 7c9e6679-7425-40de-944b-e07fc1f90ae7
	// ResourceExhausted tenant_rate_limited retry in 1m40s
	// tenant 3f2504e0-4f89-41d3-9a0c-0305e82c3301
}
