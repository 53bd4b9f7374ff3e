// Package tenantgrpc is the gRPC boundary of a tenantwire service, the
// counterpart of tenanthttp: it resolves the tenant of each call once
// (metadata key, claim of the authenticated peer) with the HTTP boundary's
// rule, binds it into the call's context for the adapters, refuses to
// boot metadata mode without a trusted proxy, serves every registered
// method on the listener its surface class allows, and carries the bound
// tenant on outgoing calls. It is a module of its own so that the library
// does not pull in gRPC.
package tenantgrpc

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// errorDomain is the ErrorInfo domain of the statuses the boundary answers;
// the ErrorInfo's reason is the tenantwire code.
const errorDomain = "tenantwire"

// Resolver resolves the tenant of a call. Build it with NewResolver, which
// enforces the key check and the trusted-proxy interlock.
type Resolver struct {
	key     string
	useKey  bool
	require bool
	claim   func(context.Context) (tenancy.ID, bool)
	// tel puts the tenant on the call's span, which a stats handler in
	// ServerOptions (otelgrpc) starts (nil: no telemetry).
	tel *telemetry.Telemetry
}

// NewResolver builds the resolver cfg describes. A key no call can carry
// as text is refused with tenant_source_invalid; metadata mode without
// cfg.TrustedProxy with trusted_proxy_required.
func NewResolver(cfg Config) (*Resolver, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return &Resolver{key: cfg.key(), useKey: !cfg.KeyOff, require: cfg.RequireTenant, claim: cfg.Claim}, nil
}

// Resolve returns the call's tenant by the HTTP boundary's rule
// (tenanthttp.ResolveSources) over the peer's claim and the values of the
// tenant key in the incoming metadata: a malformed value, or two values of
// the key, is invalid_tenant_header; a claim and a key naming different
// tenants are tenant_source_conflict; a call naming none is the default
// tenant, or tenant_required with Config.RequireTenant.
func (res *Resolver) Resolve(ctx context.Context) (tenancy.ID, error) {
	var claim tenancy.ID
	if res.claim != nil {
		if id, ok := res.claim(ctx); ok {
			claim = id
		}
	}
	var values []string
	if res.useKey {
		values = metadata.ValueFromIncomingContext(ctx, res.key)
	}
	return tenanthttp.ResolveSources(claim, values, tenancy.ID{}, res.require)
}

// bind resolves the call's tenant and returns its context with the tenant
// bound, or the refusal as a status error.
func (res *Resolver) bind(ctx context.Context) (context.Context, error) {
	id, err := res.Resolve(ctx)
	if err != nil {
		res.tel.Refused(ctx, err)
		return nil, statusErr(err)
	}
	ctx = tenancy.WithTenant(ctx, id)
	// Also on a nil Telemetry: it drops a caller's own BaggageTenant
	// member (otelgrpc extracts the caller's baggage).
	ctx = res.tel.Bound(ctx, id)
	return ctx, nil
}

// UnaryServerInterceptor binds the call's tenant into the handler's
// context, or answers the refusal (see Status) without calling it. It
// binds on every method it sees: the Module also classifies methods.
func (res *Resolver) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx, err := res.bind(ctx)
		if err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

// StreamServerInterceptor is UnaryServerInterceptor for streams: the
// handler's stream reports the bound context.
func (res *Resolver) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		ctx, err := res.bind(ss.Context())
		if err != nil {
			return err
		}
		return h(srv, boundStream{ss, ctx})
	}
}

type boundStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s boundStream) Context() context.Context { return s.ctx }

// StatusCode is the gRPC status code of each tenantwire refusal the
// boundary answers: InvalidArgument for a malformed tenant or a missing
// required one, PermissionDenied for conflicting sources,
// FailedPrecondition for an outgoing call with no tenant bound or an
// unusable key. Any other code is Internal.
func StatusCode(c tenancy.Code) codes.Code {
	switch c {
	case tenancy.CodeInvalidTenantHeader, tenancy.CodeTenantRequired:
		return codes.InvalidArgument
	case tenancy.CodeTenantSourceConflict:
		return codes.PermissionDenied
	case tenancy.CodeTenantUnbound, tenancy.CodeTenantSourceInvalid:
		return codes.FailedPrecondition
	}
	return codes.Internal
}

// Status is the gRPC status of a coded refusal: StatusCode's code, the
// refusal's text (which starts with its code) as the message, and an
// ErrorInfo detail whose reason is the code, domain "tenantwire", with the fix
// under "fix". An error with no *tenancy.Error is Internal.
func Status(err error) *status.Status {
	var e *tenancy.Error
	if !errors.As(err, &e) {
		return status.New(codes.Internal, err.Error())
	}
	st := status.New(StatusCode(e.Code), e.Error())
	withInfo, derr := st.WithDetails(&errdetails.ErrorInfo{
		Reason:   string(e.Code),
		Domain:   errorDomain,
		Metadata: map[string]string{"fix": e.Fix},
	})
	if derr != nil {
		return st
	}
	return withInfo
}

// refusals are the statuses of the shared request-time refusals, built
// once.
var refusals = map[error]*status.Status{}

func init() {
	for _, e := range []error{tenanthttp.ErrInvalidHeader, tenanthttp.ErrSourceConflict, tenanthttp.ErrTenantRequired} {
		refusals[e] = Status(e)
	}
}

func statusErr(err error) error {
	if st, ok := refusals[err]; ok {
		return st.Err()
	}
	return Status(err).Err()
}

// CodeOf returns the tenantwire code a call's error carries: the reason of
// the boundary's ErrorInfo detail when a server refused the call, or the
// code of the *tenancy.Error when the client interceptor refused it before
// sending; "" for any other error.
func CodeOf(err error) tenancy.Code {
	if c := tenancy.CodeOf(err); c != "" {
		return c
	}
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == errorDomain {
			return tenancy.Code(info.GetReason())
		}
	}
	return ""
}
