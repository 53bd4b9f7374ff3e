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
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

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
	// adm admits the call for its tenant (nil: every call).
	adm *tenanthttp.Admission
}

// NewResolver builds the resolver cfg describes. A key no call can carry
// as text is refused with tenant_source_invalid; metadata mode without
// cfg.TrustedProxy with trusted_proxy_required; admission limits that
// cannot be enforced with tenant_limits_invalid.
func NewResolver(cfg Config) (*Resolver, error) {
	if err := errors.Join(cfg.check(), cfg.Admission.Check("tenantgrpc")); err != nil {
		return nil, err
	}
	return &Resolver{key: cfg.key(), useKey: !cfg.KeyOff, require: cfg.RequireTenant, claim: cfg.Claim, adm: cfg.Admission}, nil
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

// bind resolves the call's tenant and admits the call for it
// (Config.Admission), returning its context with the tenant bound and the
// admission's ticket, or the refusal as a status error.
func (res *Resolver) bind(ctx context.Context, method string) (context.Context, tenanthttp.Ticket, error) {
	id, err := res.Resolve(ctx)
	if err != nil {
		res.tel.Refused(ctx, err)
		return nil, tenanthttp.Ticket{}, statusErr(err)
	}
	ctx = tenancy.WithTenant(ctx, id)
	// Also on a nil Telemetry: it drops a caller's own BaggageTenant
	// member (otelgrpc extracts the caller's baggage).
	ctx = res.tel.Bound(ctx, id)
	t, err := res.adm.Admit("tenantgrpc", method, id)
	if err != nil {
		res.tel.Refused(ctx, err)
		return nil, tenanthttp.Ticket{}, statusErr(err)
	}
	return ctx, t, nil
}

// UnaryServerInterceptor binds the call's tenant into the handler's
// context, or answers the refusal (see Status) without calling it; with
// Config.Admission, a call over its tenant's limits is refused
// ResourceExhausted. It binds on every method it sees: the Module also
// classifies methods.
func (res *Resolver) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx, t, err := res.bind(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		defer t.Done()
		return h(ctx, req)
	}
}

// StreamServerInterceptor is UnaryServerInterceptor for streams: the
// handler's stream reports the bound context, and the stream counts
// against its tenant's InFlight until the handler returns.
func (res *Resolver) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		ctx, t, err := res.bind(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		defer t.Done()
		return h(srv, boundStream{ss, ctx})
	}
}

type boundStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s boundStream) Context() context.Context { return s.ctx }

// StatusCode is the gRPC status code of each tenantwire code, the HTTP
// boundary's table (tenanthttp.StatusOf) in gRPC's terms:
// InvalidArgument for a malformed tenant, a missing required one or a
// malformed operator request (HTTP 400), PermissionDenied for
// conflicting sources, a foreign tenant or a suspended one (403),
// FailedPrecondition for a tenant not provisioned (409), and, raised in
// the caller before anything is sent, for an outgoing call with no tenant
// bound or an unusable key; Unavailable for an exhausted connection
// budget, a migration under way, a tenant being moved or an unreadable
// registry (503);
// ResourceExhausted for a tenant over its admission limits or its share
// of a module (429). Any other code is Internal (500).
func StatusCode(c tenancy.Code) codes.Code {
	switch c {
	case tenancy.CodeInvalidTenantHeader, tenancy.CodeTenantRequired, tenancy.CodeTenantHostAmbiguous,
		tenancy.CodeTenantIDInvalid, tenancy.CodeOperatorRequestInvalid, tenancy.CodeOffboardUnconfirmed:
		return codes.InvalidArgument
	case tenancy.CodeTenantSourceConflict, tenancy.CodeForeignTenant, tenancy.CodeTenantSuspended:
		return codes.PermissionDenied
	case tenancy.CodeTenantNotProvisioned, tenancy.CodeTenantUnbound, tenancy.CodeTenantSourceInvalid:
		return codes.FailedPrecondition
	case tenancy.CodeConnectionBudgetExhausted, tenancy.CodeTenantMigrationBehind, tenancy.CodeTenantRegistryUnavailable, tenancy.CodeTenantMoving:
		return codes.Unavailable
	case tenancy.CodeTenantRateLimited, tenancy.CodeTenantConcurrencyLimited, tenancy.CodeTenantShareExceeded:
		return codes.ResourceExhausted
	}
	return codes.Internal
}

// callerMessages are the codes a status names although the HTTP table
// answers them as internal: refusals of an outgoing call, raised in the
// caller's own process.
var callerMessages = map[tenancy.Code]string{
	tenancy.CodeTenantUnbound:       "the call has no tenant bound",
	tenancy.CodeTenantSourceInvalid: "the tenant key or header name cannot be carried",
}

// clientFix is the fix a status carries: the boundary's own resolution
// refusals' fixes, written for the client. Any other Fix, and the one an
// error of these codes carries, may name the service's modules or
// operator steps and stays in the error.
var clientFix = map[tenancy.Code]string{}

func init() {
	for _, e := range []*tenancy.Error{tenanthttp.ErrInvalidHeader, tenanthttp.ErrTenantRequired, tenanthttp.ErrSourceConflict, tenanthttp.ErrHostAmbiguous} {
		clientFix[e.Code] = e.Fix
	}
}

// Status is the gRPC status of a coded refusal: StatusCode's code, a
// message "<code>: <message>" with the HTTP boundary's fixed message
// (tenanthttp.Public), and an ErrorInfo detail whose reason is the code,
// domain "tenantwire", with the fix under "fix" for the boundary's own
// resolution refusals, and for an admission refusal a RetryInfo detail
// with the time after which a retry can succeed. Neither names the
// error's module, backend, route or detail: a handler returning Status(err) tells the client the kind of
// refusal, never the service's insides. A code the HTTP table answers as
// internal, and an error with no *tenancy.Error, is Internal naming the
// code "internal".
func Status(err error) *status.Status {
	var e *tenancy.Error
	if !errors.As(err, &e) {
		return status.New(codes.Internal, tenanthttp.CodeInternal+": internal error")
	}
	code, msg := tenanthttp.Public(e)
	if m, ok := callerMessages[e.Code]; ok {
		code, msg = string(e.Code), m
	}
	if code == tenanthttp.CodeInternal {
		return status.New(codes.Internal, code+": "+msg)
	}
	st := status.New(StatusCode(e.Code), code+": "+msg)
	info := &errdetails.ErrorInfo{Reason: code, Domain: errorDomain}
	if fix, ok := clientFix[e.Code]; ok {
		info.Metadata = map[string]string{"fix": fix}
	}
	details := []protoadapt.MessageV1{info}
	var le *tenanthttp.LimitError
	if errors.As(err, &le) {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(le.RetryAfter)})
	}
	withInfo, derr := st.WithDetails(details...)
	if derr != nil {
		return st
	}
	return withInfo
}

// RetryDelay is the delay of the RetryInfo detail a call's error carries
// (a refusal by the boundary's admission); false when it has none.
func RetryDelay(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok {
		return 0, false
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
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
