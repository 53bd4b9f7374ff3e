package tenantgrpc

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tenantwire/tenantwire/tenancy"
)

// TestGateAndFilterEachHold: a method of another class is kept off a
// server twice, by leaving it out of the server's descriptor and by the
// gate in front of every handler. The loopback tests see only both
// together; this checks each one alone.
func TestGateAndFilterEachHold(t *testing.T) {
	d := serviceDef{
		Desc: &grpc.ServiceDesc{
			ServiceName: "s",
			HandlerType: (*any)(nil),
			Methods:     []grpc.MethodDesc{{MethodName: "T"}, {MethodName: "O"}, {MethodName: "B"}},
			Streams:     []grpc.StreamDesc{{StreamName: "TS"}, {StreamName: "OS"}, {StreamName: "BS"}},
		},
		Impl:    struct{}{},
		Class:   Tenant,
		Methods: []Method{{"O", Operator}, {"OS", Operator}, {"B", Blocked}, {"BS", Blocked}},
	}
	classes, errs := classify(d)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, c := range []struct {
		class            Class
		methods, streams string
	}{{Tenant, "T", "TS"}, {Operator, "O", "OS"}} {
		r, ok := filtered(d, classes, c.class)
		if !ok || len(r.desc.Methods) != 1 || r.desc.Methods[0].MethodName != c.methods ||
			len(r.desc.Streams) != 1 || r.desc.Streams[0].StreamName != c.streams {
			t.Errorf("%v server registers %+v", c.class, r.desc)
		}
	}
	if _, ok := filtered(d, classes, Blocked); !ok {
		t.Error("the blocked methods are not found")
	}

	s := &Server{classes: classes}
	ran := false
	unaryH := func(context.Context, any) (any, error) { ran = true; return nil, nil }
	streamH := func(any, grpc.ServerStream) error { ran = true; return nil }
	for _, server := range []Class{Tenant, Operator} {
		unary, stream := s.gate(server)
		for full, class := range classes {
			ran = false
			_, uerr := unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: full}, unaryH)
			serr := stream(nil, nil, &grpc.StreamServerInfo{FullMethod: full}, streamH)
			for _, err := range []error{uerr, serr} {
				if class == server && err != nil || class != server && status.Code(err) != codes.Unimplemented {
					t.Errorf("%v gate, %s (%v): %v", server, full, class, err)
				}
			}
			if ran != (class == server) {
				t.Errorf("%v gate, %s (%v): handler ran %v", server, full, class, ran)
			}
		}
		ran = false
		if _, err := unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/s/Nope"}, unaryH); status.Code(err) != codes.Unimplemented || ran {
			t.Errorf("%v gate, unknown method: %v", server, err)
		}
	}
}

// TestOutgoingMetadataExact: what an outgoing call carries under the key
// is exactly the bound tenant, once, or nothing for a tenant-global call,
// whatever the caller set by hand (blank, another spelling of the key).
func TestOutgoingMetadataExact(t *testing.T) {
	o, err := NewOutgoing("")
	if err != nil {
		t.Fatal(err)
	}
	a := "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	bound := tenancy.WithTenant(context.Background(), tenancy.MustParseID(a))
	global := tenancy.WithGlobal(context.Background())
	for _, c := range []struct {
		name string
		ctx  context.Context
		opts []grpc.CallOption
		want []string
	}{
		{"bound", bound, nil, []string{a}},
		{"bound, same tenant by hand", metadata.AppendToOutgoingContext(bound, "X-Tenant-ID", strings.ToUpper(a)), nil, []string{a}},
		{"bound, blank by hand", metadata.AppendToOutgoingContext(bound, "x-tenant-id", " "), nil, []string{a}},
		{"global", global, nil, nil},
		{"global, blank by hand", metadata.AppendToOutgoingContext(global, "x-tenant-id", " "), nil, nil},
		{"global option, blank by hand", metadata.AppendToOutgoingContext(bound, "x-tenant-id", ""), []grpc.CallOption{Global()}, nil},
	} {
		ctx, err := o.outgoing(c.ctx, c.opts)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		md, _ := metadata.FromOutgoingContext(ctx)
		if got, present := md["x-tenant-id"]; !slices.Equal(got, c.want) || present != (c.want != nil) {
			t.Errorf("%s: sends %q (present %v), want %q", c.name, got, present, c.want)
		}
	}
}
