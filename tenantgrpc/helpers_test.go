package tenantgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantgrpc"
)

// Every test of the package leaves no goroutine behind: the servers stop
// in OnStop, and every client and connection a test opens is closed.
// Boot lines of apps without their own logger are discarded.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	goleak.VerifyTestMain(m)
}

var (
	tenantA = tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	tenantB = tenancy.MustParseID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")
)

const echoName = "tenantwire.test.Echo"

// echoer is the handler type of the hand-written Echo service: no protoc,
// messages are protobuf's well-known StringValue, so gRPC's default codec
// carries them.
type echoer interface {
	whoami(ctx context.Context) string
}

// echo answers the tenant bound to each call ("unbound" when none) and
// counts the calls its handlers ran, so a test can tell that a refused
// call never reached one.
type echo struct {
	calls atomic.Int64
	// relay is the next hop of Relay: a connection through the client
	// interceptors, and an HTTP client through tenanthttp.Transport.
	next     *grpc.ClientConn
	httpNext string
	http     *http.Client
}

func (e *echo) whoami(ctx context.Context) string {
	e.calls.Add(1)
	if id, ok := tenancy.FromContext(ctx); ok {
		return id.String()
	}
	return "unbound"
}

// relay makes three outgoing calls under the handler's context, the one
// the boundary bound: Whoami and Watch on the next gRPC hop, GET on the
// next HTTP hop. It answers what each hop saw.
func (e *echo) relay(ctx context.Context) (string, error) {
	e.calls.Add(1)
	unary, err := callWhoami(ctx, e.next)
	if err != nil {
		return "", fmt.Errorf("grpc unary hop: %w", err)
	}
	stream, err := callWatch(ctx, e.next)
	if err != nil {
		return "", fmt.Errorf("grpc stream hop: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.httpNext, nil)
	if err != nil {
		return "", err
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("http hop: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return "grpc=" + unary + " stream=" + strings.Join(stream, ",") + " http=" + string(body), nil
}

func unaryMethod(name string, f func(ctx context.Context, e echoer) (string, error)) grpc.MethodDesc {
	return grpc.MethodDesc{MethodName: name, Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, _ any) (any, error) {
			s, err := f(ctx, srv.(echoer))
			if err != nil {
				return nil, err
			}
			return wrapperspb.String(s), nil
		}
		if ic == nil {
			return h(ctx, in)
		}
		return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + echoName + "/" + name}, h)
	}}
}

// echoDesc is the Echo service: Whoami (unary), Watch (server stream: the
// bound tenant, twice), Relay (unary, calls the next hops), Reset (meant
// for the operator listener) and Debug (meant to be blocked).
var echoDesc = grpc.ServiceDesc{
	ServiceName: echoName,
	HandlerType: (*echoer)(nil),
	Methods: []grpc.MethodDesc{
		unaryMethod("Whoami", func(ctx context.Context, e echoer) (string, error) { return e.whoami(ctx), nil }),
		unaryMethod("Relay", func(ctx context.Context, e echoer) (string, error) { return e.(*echo).relay(ctx) }),
		unaryMethod("Reset", func(ctx context.Context, e echoer) (string, error) { return "reset " + e.whoami(ctx), nil }),
		unaryMethod("Debug", func(ctx context.Context, e echoer) (string, error) { return "debug " + e.whoami(ctx), nil }),
	},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Watch",
		ServerStreams: true,
		Handler: func(srv any, ss grpc.ServerStream) error {
			if err := ss.RecvMsg(new(wrapperspb.StringValue)); err != nil {
				return err
			}
			who := srv.(echoer).whoami(ss.Context())
			for range 2 {
				if err := ss.SendMsg(wrapperspb.String(who)); err != nil {
					return err
				}
			}
			return nil
		},
	}},
}

// echoClasses is the usual classification of Echo.
var echoClasses = []tenantgrpc.Method{{Name: "Reset", Class: tenantgrpc.Operator}, {Name: "Debug", Class: tenantgrpc.Blocked}}

func callWhoami(ctx context.Context, cc *grpc.ClientConn, opts ...grpc.CallOption) (string, error) {
	return callUnary(ctx, cc, "Whoami", opts...)
}

func callUnary(ctx context.Context, cc *grpc.ClientConn, method string, opts ...grpc.CallOption) (string, error) {
	out := new(wrapperspb.StringValue)
	if err := cc.Invoke(ctx, "/"+echoName+"/"+method, wrapperspb.String(""), out, opts...); err != nil {
		return "", err
	}
	return out.GetValue(), nil
}

// callWatch opens Watch and reads it to its end.
func callWatch(ctx context.Context, cc *grpc.ClientConn, opts ...grpc.CallOption) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := cc.NewStream(ctx, &grpc.StreamDesc{StreamName: "Watch", ServerStreams: true}, "/"+echoName+"/Watch", opts...)
	if err != nil {
		return nil, err
	}
	if err := st.SendMsg(wrapperspb.String("")); err != nil {
		return nil, err
	}
	if err := st.CloseSend(); err != nil {
		return nil, err
	}
	var got []string
	for {
		m := new(wrapperspb.StringValue)
		err := st.RecvMsg(m)
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return nil, err
		}
		got = append(got, m.GetValue())
	}
}

// startApp runs the module on loopback with random ports until the test
// ends.
func startApp(t *testing.T, cfg tenantgrpc.Config, opts ...fx.Option) *tenantgrpc.Server {
	t.Helper()
	cfg.TenantAddr, cfg.OperatorAddr = "127.0.0.1:0", "127.0.0.1:0"
	var srv *tenantgrpc.Server
	app := fx.New(append([]fx.Option{fx.NopLogger, tenantgrpc.Module(cfg), fx.Populate(&srv)}, opts...)...)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return srv
}

// dial connects a plain client (no tenantwire interceptor: what any
// client can send) to addr until the test ends.
func dial(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

type claimKey struct{}

// bearerAuth stands in for the user's authentication interceptor: it puts
// the peer's tenant claim (here, a bearer token that is the tenant id) in
// the context, where Config.Claim reads it.
func bearerAuth(ctx context.Context) context.Context {
	for _, v := range metadata.ValueFromIncomingContext(ctx, "authorization") {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok {
			if id, err := tenancy.ParseID(tok); err == nil {
				return context.WithValue(ctx, claimKey{}, id)
			}
		}
	}
	return ctx
}

func claimFrom(ctx context.Context) (tenancy.ID, bool) {
	id, ok := ctx.Value(claimKey{}).(tenancy.ID)
	return id, ok
}

// authOptions install bearerAuth as the tenant server's authentication.
func authOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return h(bearerAuth(ctx), req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return h(srv, authStream{ss, bearerAuth(ss.Context())})
		}),
	}
}

type authStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s authStream) Context() context.Context { return s.ctx }
