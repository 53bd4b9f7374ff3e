package telemetry

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenantwire/tenantwire/tenancy"
)

// BaggageTenant is the baggage member the boundaries add with
// Config.Baggage. No other value of it survives the boundary: a client
// sending its own is never believed downstream.
const BaggageTenant = "tenantwire.tenant"

// baggageHeader is the W3C baggage field a carrier holds.
const baggageHeader = "baggage"

// Bound is called by a boundary once it has bound tenant to ctx: the
// request's span gets the tenant attribute (under the span policy) and,
// with Config.Baggage, the request's baggage gets it too. Whatever the
// policy, and on a nil *Telemetry, a BaggageTenant member ctx carries
// already (the caller's, extracted from its request) is dropped first, so
// the member downstream services see is the framework's or none.
func (t *Telemetry) Bound(ctx context.Context, tenant tenancy.ID) context.Context {
	ctx = dropTenantBaggage(ctx)
	if t == nil {
		return ctx
	}
	kv, ok := t.SpanTenant(tenant)
	if !ok {
		return ctx
	}
	trace.SpanFromContext(ctx).SetAttributes(kv)
	if !t.cfg.Baggage {
		return ctx
	}
	return withTenantBaggage(ctx, kv.Value.AsString())
}

// dropTenantBaggage is ctx without a BaggageTenant member; ctx itself,
// with no allocation, when it carries none.
func dropTenantBaggage(ctx context.Context) context.Context {
	b := baggage.FromContext(ctx)
	if b.Member(BaggageTenant).Key() == "" {
		return ctx
	}
	return baggage.ContextWithBaggage(ctx, b.DeleteMember(BaggageTenant))
}

func withTenantBaggage(ctx context.Context, v string) context.Context {
	m, err := baggage.NewMemberRaw(BaggageTenant, v)
	if err != nil {
		return ctx
	}
	b, err := baggage.FromContext(ctx).SetMember(m)
	if err != nil {
		return ctx
	}
	return baggage.ContextWithBaggage(ctx, b)
}

// carriedBaggage is ctx with its BaggageTenant member as the framework
// writes it for the tenant bound to ctx: with Config.Baggage, the bound
// tenant under the span policy, and otherwise none, whatever member ctx
// held. What a row or record stores and forwards is then never a member a
// caller wrote.
func (t *Telemetry) carriedBaggage(ctx context.Context) context.Context {
	ctx = dropTenantBaggage(ctx)
	if !t.cfg.Baggage {
		return ctx
	}
	id, ok := tenancy.FromContext(ctx)
	if !ok {
		return ctx
	}
	if kv, ok := t.SpanTenant(id); ok {
		return withTenantBaggage(ctx, kv.Value.AsString())
	}
	return ctx
}

// scrubBaggage is a baggage header value without its BaggageTenant
// member; ok false when nothing of it is left, or when it cannot be read
// and names the member (it is then dropped whole).
func scrubBaggage(v string) (string, bool) {
	if !strings.Contains(v, BaggageTenant) {
		return v, true
	}
	b, err := baggage.Parse(v)
	if err != nil {
		return "", false
	}
	b = b.DeleteMember(BaggageTenant)
	if b.Len() == 0 {
		return "", false
	}
	return b.String(), true
}
