package tenanthttp

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// CodeInternal is the code a response names for any error that is not
// one of the public codes (Public): a wiring or floor refusal, a driver's
// error. Its real code, module and route go to the log and the span.
// It is no tenancy code: no *tenancy.Error carries it.
const CodeInternal = "internal"

// RetryAfter is the Retry-After (seconds) of a 503 that WriteError answers.
const RetryAfter = 1

// public is what a client may learn of a coded error: the status and a
// message that names no module, backend, route or container. The gRPC
// boundary maps the same codes (tenantgrpc.StatusCode).
var public = map[tenancy.Code]struct {
	status  int
	message string
}{
	tenancy.CodeInvalidTenantHeader:       {http.StatusBadRequest, "invalid tenant header (must be a UUID)"},
	tenancy.CodeTenantRequired:            {http.StatusBadRequest, "the request names no tenant"},
	tenancy.CodeTenantHostAmbiguous:       {http.StatusBadRequest, "request target names a host (absolute form)"},
	tenancy.CodeTenantIDInvalid:           {http.StatusBadRequest, "the request names a tenant id that is not a UUID"},
	tenancy.CodeOperatorRequestInvalid:    {http.StatusBadRequest, "the request is malformed"},
	tenancy.CodeOffboardUnconfirmed:       {http.StatusBadRequest, "the request does not confirm the tenant it names"},
	tenancy.CodeTenantSourceConflict:      {http.StatusForbidden, "tenant sources disagree"},
	tenancy.CodeForeignTenant:             {http.StatusForbidden, "the request names data of another tenant"},
	tenancy.CodeTenantSuspended:           {http.StatusForbidden, "the tenant is suspended"},
	tenancy.CodeTenantNotProvisioned:      {http.StatusConflict, "the tenant is not provisioned"},
	tenancy.CodeConnectionBudgetExhausted: {http.StatusServiceUnavailable, "the service is busy, retry later"},
	tenancy.CodeTenantMigrationBehind:     {http.StatusServiceUnavailable, "the tenant's data is being migrated, retry later"},
	tenancy.CodeTenantRegistryUnavailable: {http.StatusServiceUnavailable, "the service is unavailable, retry later"},
	tenancy.CodeTenantMoving:              {http.StatusServiceUnavailable, "the tenant's data is being moved, retry later"},
	tenancy.CodeTenantShareExceeded:       {http.StatusTooManyRequests, "the tenant has too many requests in flight, retry later"},
	tenancy.CodeTenantRateLimited:         {http.StatusTooManyRequests, "the tenant is over its request rate, retry later"},
	tenancy.CodeTenantConcurrencyLimited:  {http.StatusTooManyRequests, "the tenant has too many requests in flight, retry later"},
}

// Public is the code and message a response names for err: its
// *tenancy.Error's code and a fixed message when the code is public,
// else CodeInternal and "internal error". Neither ever holds a module,
// backend, route, container name or the error's Detail.
func Public(err error) (code, message string) {
	if c := tenancy.CodeOf(err); c != "" {
		if p, ok := public[c]; ok {
			return string(c), p.message
		}
	}
	return CodeInternal, "internal error"
}

// StatusOf is the HTTP status WriteError answers for err: 400 for a
// malformed or missing tenant (invalid_tenant_header, tenant_required,
// tenant_host_ambiguous) or operator request, 403 for conflicting sources,
// a foreign tenant or a suspended one, 409 for a tenant not provisioned,
// 429 for a tenant over its admission limits (tenant_rate_limited,
// tenant_concurrency_limited) or its share of a module
// (tenant_share_exceeded), 503 for an exhausted connection budget, a
// migration under way or an unreadable registry, and 500 for anything
// else, tenant_unbound and tenant_limits_invalid included: a handler calling with no tenant bound is the service's
// fault, not the client's.
func StatusOf(err error) int {
	if p, ok := public[tenancy.CodeOf(err)]; ok {
		return p.status
	}
	return http.StatusInternalServerError
}

// WriteError answers err as JSON, {"error":"<message>","code":"<code>"},
// with StatusOf's status (and Retry-After on a 503, and on a 429 the
// seconds RetryAfterOf gives): Public's code and message, so a
// tenant-listener client learns what kind of refusal it met and nothing
// of the service's modules or routes. The whole error, its module, route,
// detail and fix, goes to the log (slog.Default) with the request's route
// pattern, at Debug for a 429 (a tenant flooding the boundary would flood
// the log too), and to the request's span with its code.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	status := StatusOf(err)
	code, msg := Public(err)
	if r != nil {
		ctx := r.Context()
		telemetry.RecordRefused(ctx, err)
		level := slog.LevelInfo
		switch {
		case status >= 500:
			level = slog.LevelError
		case status == http.StatusTooManyRequests:
			level = slog.LevelDebug
		}
		if l := slog.Default(); l.Enabled(ctx, level) {
			l.LogAttrs(ctx, level, "tenanthttp: request answered with an error",
				slog.Int("status", status), slog.String("code", string(tenancy.CodeOf(err))),
				slog.String("http.route", r.Pattern), slog.String("error", errText(err)))
		}
	}
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, code})
	switch status {
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
	case http.StatusTooManyRequests:
		wait, _ := RetryAfterOf(err)
		w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(wait/time.Second)), 10))
	}
	writeJSON(w, status, string(body))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	var e *tenancy.Error
	if errors.As(err, &e) && e.Fix != "" {
		return err.Error() + " (fix: " + e.Fix + ")"
	}
	return err.Error()
}

// refusalBodies are the resolver's refusals as WriteError writes them,
// built once, so a refusal on the hot path allocates nothing.
var refusalBodies = func() map[error][]byte {
	out := map[error][]byte{}
	for _, e := range []error{ErrInvalidHeader, ErrSourceConflict, ErrTenantRequired, ErrHostAmbiguous} {
		code, msg := Public(e)
		out[e], _ = json.Marshal(struct {
			Error string `json:"error"`
			Code  string `json:"code"`
		}{msg, code})
	}
	return out
}()
