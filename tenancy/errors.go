package tenancy

import (
	"errors"
	"strings"
)

// Code identifies a kind of refusal. It implements error so that
// errors.Is(err, tenancy.CodeTenantUnbound) finds a coded *Error anywhere in
// a chain, including through fx's wrapping.
type Code string

func (c Code) Error() string { return string(c) }

// Problem is wiring no rule can express, found before it is refused:
// what is wrong, and exactly what to change. A module refuses each as
// its backend's wiring_invalid, naming module and route.
type Problem struct{ Detail, Fix string }

// The codes shared by every backend. Backend-specific floor misses use
// ValidationFailed(backend); a code only one backend raises is declared
// by that backend's package.
const (
	CodeStatementOriginFloor     Code = "statement_origin_isolation_floor"
	CodeStatementOriginUnknown   Code = "statement_origin_unknown"
	CodeTenantGlobalRequired     Code = "tenant_global_required"
	CodeFleetTenantScoped        Code = "fleet.tenant_scoped_route"
	CodeGlobalTenantScoped       Code = "tenant_global.tenant_scoped_route"
	CodeTenantUnbound            Code = "tenant_unbound"
	CodeTrustedProxyRequired     Code = "trusted_proxy_required"
	CodeRouteUnclassified        Code = "route_unclassified"
	CodeInvalidTenantHeader      Code = "invalid_tenant_header"
	CodeWorkerRouteUnknown       Code = "worker_route_unknown"
	CodeWiringInvalid            Code = "wiring_invalid"
	CodeConnectionBudgetExceeded Code = "connection_budget_exceeded"
	CodeTenantSourceConflict     Code = "tenant_source_conflict"
	CodeRouteInvalid             Code = "route_invalid"
	CodeTenantScopeChanged       Code = "tenant_scope_changed"
	CodeTenantSourceInvalid      Code = "tenant_source_invalid"
	CodeTenantHostAmbiguous      Code = "tenant_host_ambiguous"
	CodeRouteClassOverlap        Code = "route_class_overlap"
	CodeForeignTenant            Code = "foreign_tenant"
	// CodeTenantRequired: the boundary requires every request to name a
	// tenant, and this one names none.
	CodeTenantRequired Code = "tenant_required"
	// CodeTenantSuspended: the bound tenant is suspended; every route of
	// every module refuses its calls until it is resumed.
	CodeTenantSuspended Code = "tenant_suspended"
	// CodeDedicatedTargetShared: a routed tenant resolves to a data target
	// (database, cluster) another tenant of the process already uses.
	CodeDedicatedTargetShared Code = "dedicated_target_shared"
	// CodeConnectionBudgetExhausted: no routed client slot freed up in time.
	CodeConnectionBudgetExhausted Code = "connection_budget_exhausted"
	// CodeTenantNotProvisioned: the bound tenant's schema, table, topic,
	// collection or database does not exist yet: nobody called the
	// backend's provisioning for it.
	CodeTenantNotProvisioned Code = "tenant_not_provisioned"
	// CodeMigrationHistoryConflict: a migration already applied to a
	// container was edited, removed or is older than one applied after it.
	CodeMigrationHistoryConflict Code = "migration_history_conflict"
	// CodeTenantMigrationBehind: a tenant's containers are at an older
	// migration version than the module's routes need.
	CodeTenantMigrationBehind Code = "tenant_migration_behind"
	// CodeStaticNameInTenantSpace: a container named statically (a schema,
	// database, topic, consumer group) has the shape of a per-tenant name,
	// so some tenant's provisioning, migrations or teardown would act on it.
	CodeStaticNameInTenantSpace Code = "static_name_in_tenant_space"
	// CodeReservedName: a route names something the framework keeps for
	// its own records (migration history, tenant registry).
	CodeReservedName Code = "reserved_name"
	// CodeTenantAdminUnwired: the operator surface for tenants
	// (tenantadmin) is in an app that cannot serve it: no
	// modules.Lifecycle, or no tenant registry.
	CodeTenantAdminUnwired Code = "tenant_admin_unwired"
	// CodeTenantIDInvalid: an operator request or command names a tenant
	// that is not a canonical UUID.
	CodeTenantIDInvalid Code = "tenant_id_invalid"
	// CodeOffboardUnconfirmed: an offboard request does not confirm the
	// tenant it destroys.
	CodeOffboardUnconfirmed Code = "offboard_unconfirmed"
	// CodeOperatorRequestInvalid: an operator request or command is
	// malformed (a parameter it does not take, a value it cannot read).
	CodeOperatorRequestInvalid Code = "operator_request_invalid"
	// CodeOperatorRequestForbidden: an operator request is in a form a web
	// page can make a browser send (a foreign Host, a cross-site Origin, a
	// simple content type) or fails the configured authentication.
	CodeOperatorRequestForbidden Code = "operator_request_forbidden"
	// CodeOperatorHostsInvalid: an entry of the names the operator
	// listener answers is not a host name or host:port.
	CodeOperatorHostsInvalid Code = "operator_hosts_invalid"
	// CodeTenantStepFailed: a lifecycle step ran and at least one module
	// failed its part; the report says which and why.
	CodeTenantStepFailed Code = "tenant_step_failed"
	// CodeTenantRegistryUnavailable: the tenant registry could not be read.
	CodeTenantRegistryUnavailable Code = "tenant_registry_unavailable"
	// CodeTenantDrainTimeout: an offboard suspended the tenant but calls
	// that began before were still running when its deadline passed; the
	// tenant stays suspended and nothing was removed.
	CodeTenantDrainTimeout Code = "tenant_drain_timeout"
	// CodeTenantErasureIncomplete: an offboard's teardown ran and the
	// module's verifier still found the tenant's data in a family it
	// declares; the tenant stays suspended.
	CodeTenantErasureIncomplete Code = "tenant_erasure_incomplete"
	// CodeErasureProofAltered: an erasure proof's digest does not match
	// its content; it was changed after the offboard wrote it.
	CodeErasureProofAltered Code = "erasure_proof_altered"
	// CodeTenantShareExceeded: a call of a tenant that already holds its
	// share of a module's calls (modules.TenantShare) waited its bound and
	// was refused; retryable.
	CodeTenantShareExceeded Code = "tenant_share_exceeded"
	// CodeTenantShareInvalid: a modules.TenantShare that cannot be met (no
	// such module, no lifecycle, a share below one call or leaving no
	// connection for other tenants), refused at fx.New.
	CodeTenantShareInvalid Code = "tenant_share_invalid"
	// CodeTenantPlacementUnderFloor: the tenant's plan requires a tier
	// above the placement a module holds it at; nothing is served from
	// the weaker placement.
	CodeTenantPlacementUnderFloor Code = "tenant_placement_under_floor"
	// CodeTenantPlacementInvalid: a tenant's recorded placement is not one
	// the module offers, or a module's offer of placements is malformed.
	CodeTenantPlacementInvalid Code = "tenant_placement_invalid"
	// CodeTenantMoving: a write of a tenant whose data a move is copying
	// to another placement; retryable.
	CodeTenantMoving Code = "tenant_moving"
	// CodeTenantMoveRefused: a move of a tenant that is suspended,
	// offboarding or already moving, or a cleanup of its current copy.
	CodeTenantMoveRefused Code = "tenant_move_refused"
	// CodeTenantMoveUnverified: a move's copy did not match its source
	// record by record; the copy was removed and the tenant not moved.
	CodeTenantMoveUnverified Code = "tenant_move_unverified"
	// CodeTenantRateLimited: the boundary refused a request because its
	// tenant is over its request rate; retry after the time it names.
	CodeTenantRateLimited Code = "tenant_rate_limited"
	// CodeTenantConcurrencyLimited: the boundary refused a request because
	// its tenant already has as many requests in flight as it may.
	CodeTenantConcurrencyLimited Code = "tenant_concurrency_limited"
	// CodeTenantLimitsInvalid: a tenant's admission limits cannot be
	// enforced as written (a rate with no burst, a negative bound).
	CodeTenantLimitsInvalid Code = "tenant_limits_invalid"
	// CodeArchiveInvalid: an archive given to Tenants.Import is not one
	// (no header, a malformed line, no manifest: truncated).
	CodeArchiveInvalid Code = "archive_invalid"
	// CodeArchiveMismatch: an archive's records do not match its manifest
	// (counts, hashes: altered), or its manifest does not match the app
	// (a module, backend, route or migration version it does not have).
	CodeArchiveMismatch Code = "archive_mismatch"
	// CodeArchiveTargetNotEmpty: an import's target tenant already holds
	// data in a module; an import only fills an empty tenant.
	CodeArchiveTargetNotEmpty Code = "archive_target_not_empty"
	// CodeArchiveVersionAhead: an archive was exported at a migration
	// version newer than the app's.
	CodeArchiveVersionAhead Code = "archive_version_ahead"
)

// ValidationFailed returns the backend's floor-miss code,
// "<backend>_tenancy_validation_failed".
func ValidationFailed(backend string) Code {
	return Code(backend + "_tenancy_validation_failed")
}

// ErrCapabilityMismatch matches (with errors.Is) a validation failure whose
// cause is a floor the backend can never reach, as opposed to a wiring gap.
var ErrCapabilityMismatch = errors.New("tenancy: capability mismatch")

// Error is the one coded error type. Wiring refusals fill every field that
// applies; runtime refusals (tenant_unbound) carry the code and the fix.
type Error struct {
	Code    Code
	Module  string
	Backend string
	Route   string
	// Tiers reports whether Reached, Required and Ceiling are meaningful.
	Tiers    bool
	Reached  Tier
	Required Tier
	Ceiling  Tier
	Origin   Origin
	// CapabilityMismatch marks a floor above the backend's ceiling.
	CapabilityMismatch bool
	// Detail says what was found; Fix says what to change.
	Detail string
	Fix    string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Module != "" || e.Route != "" {
		b.WriteString(": ")
		sep := ""
		field := func(k, v string) {
			if v != "" {
				b.WriteString(sep + k + "=" + v)
				sep = " "
			}
		}
		field("module", e.Module)
		field("backend", e.Backend)
		field("route", e.Route)
		if e.Tiers {
			field("reached", e.Reached.String())
			field("required", e.Required.String())
			field("ceiling", e.Ceiling.String())
			field("origin", e.Origin.String())
		}
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Fix != "" {
		b.WriteString(" (fix: " + e.Fix + ")")
	}
	return b.String()
}

// Is matches a Code equal to e.Code, and ErrCapabilityMismatch when e is one.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case Code:
		return t == e.Code
	case *Error:
		return t == e
	}
	return target == ErrCapabilityMismatch && e.CapabilityMismatch
}

// CodeOf returns the code of the first *Error in err's chain, or "".
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Codes returns the codes of every *Error in err's tree (errors.Join and
// fmt.Errorf with several %w are walked), in order.
func Codes(err error) []Code {
	var out []Code
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if e, ok := err.(*Error); ok {
			out = append(out, e.Code)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}
