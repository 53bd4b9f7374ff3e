package tenantgrpc

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// Outgoing carries the tenant bound to a call's context to the server it
// calls, in the tenant metadata key, by the HTTP transport's rule
// (tenanthttp.OutgoingTenant): a call under a tenant-global context
// (tenancy.WithGlobal) or with the Global call option leaves with no
// tenant, and a call under neither is refused with tenant_unbound
// (FailedPrecondition) before anything is sent. A value the caller set
// under the key by hand that is not that tenant is refused with
// tenant_source_conflict. Build it with NewOutgoing.
type Outgoing struct {
	key string
}

// NewOutgoing builds the client side for the metadata key the called
// service reads ("" means x-tenant-id). A key no call can carry as text is
// refused with tenant_source_invalid, as on the server.
func NewOutgoing(key string) (*Outgoing, error) {
	cfg := Config{Key: key, TrustedProxy: true}
	if err := cfg.checkKey(); err != nil {
		return nil, err
	}
	return &Outgoing{key: cfg.key()}, nil
}

// DialOptions installs both interceptors on a grpc.ClientConn.
func (o *Outgoing) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(o.UnaryClientInterceptor()),
		grpc.WithChainStreamInterceptor(o.StreamClientInterceptor()),
	}
}

// UnaryClientInterceptor sets the tenant key on every unary call, or
// refuses it.
func (o *Outgoing) UnaryClientInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx, err := o.outgoing(ctx, opts)
		if err != nil {
			return err
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// StreamClientInterceptor sets the tenant key on every stream, or refuses
// it before the stream opens.
func (o *Outgoing) StreamClientInterceptor() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		ctx, err := o.outgoing(ctx, opts)
		if err != nil {
			return nil, err
		}
		return streamer(ctx, desc, cc, method, opts...)
	}
}

// outgoing returns ctx with the key's outgoing values replaced by the
// tenant to send (none for a tenant-global call), or the refusal.
func (o *Outgoing) outgoing(ctx context.Context, opts []grpc.CallOption) (context.Context, error) {
	for _, opt := range opts {
		if _, ok := opt.(globalOption); ok {
			ctx = tenancy.WithGlobal(ctx)
			break
		}
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	v, err := tenanthttp.OutgoingTenant(ctx, md[o.key])
	if err != nil {
		var e *tenancy.Error
		if errors.As(err, &e) {
			return nil, callError{e}
		}
		return nil, err
	}
	if v == "" && md[o.key] == nil {
		return ctx, nil
	}
	// md is FromOutgoingContext's merged copy: every spelling of the key
	// is in md[o.key], and what is sent is exactly what is set here.
	if md == nil {
		md = metadata.MD{}
	}
	if v == "" {
		delete(md, o.key)
	} else {
		md[o.key] = []string{v}
	}
	return metadata.NewOutgoingContext(ctx, md), nil
}

// Global marks one call as tenant-global: it is sent with no tenant, even
// when the context has one bound (a health check, a deployment-wide
// lookup). tenancy.WithGlobal on the context does the same for every call
// made under it.
func Global() grpc.CallOption { return globalOption{} }

type globalOption struct{ grpc.EmptyCallOption }

// callError is an outgoing refusal: errors.Is and errors.As find its
// *tenancy.Error, and status.Code reports StatusCode's code for it.
type callError struct{ err *tenancy.Error }

func (e callError) Error() string              { return e.err.Error() }
func (e callError) Unwrap() error              { return e.err }
func (e callError) GRPCStatus() *status.Status { return Status(e.err) }
