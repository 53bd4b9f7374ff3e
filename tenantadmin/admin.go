// Package tenantadmin is the operator surface for tenants: endpoints on the
// operator listener of tenanthttp that list tenants and provision, suspend,
// resume and offboard one, and Run, which gives an app's main the same
// steps as subcommands sent to a running replica.
package tenantadmin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// Config configures the operator surface.
type Config struct {
	// Registry lists the service's tenants for GET /tenants and GET
	// /tenants/{id}. Required: nil is refused at fx.New. Give the same
	// registry to the modules (modules.TenantRegistry) so provisioning
	// records tenants and offboarding forgets them.
	Registry migrate.Registry

	// Token, when set, must come with every request as "Authorization:
	// Bearer <token>". With Authenticate, it is how to expose the
	// listener beyond loopback (see docs/security.md).
	Token string
	// Authenticate, when set, is asked about every request after the
	// token check (the operator listener has checked its Host and
	// Origin: tenanthttp.Config.OperatorHosts); an error refuses it with
	// operator_request_forbidden before any handler runs.
	Authenticate func(*http.Request) error
	// Off lists endpoints not to mount: they answer 404 like any path the
	// listener does not serve. Declaring their paths tenanthttp.Blocked
	// switches them off too.
	Off []Endpoint
	// DrainWait bounds how long an offboard waits for the tenant's calls
	// and workers in flight before it gives up with tenant_drain_timeout,
	// removing nothing (default 30s; the request's own end also ends it).
	// A negative wait is refused at fx.New.
	DrainWait time.Duration
	// RecordPlacement, when set, writes a tenant's record (its plan,
	// placements and the write fence of a move) to the store that
	// modules.LifecycleConfig.Placed reads, so a move on POST
	// /tenants/{id}/move reaches every replica (modules.MoveOptions.Record).
	// Nil: a move is this replica's only.
	RecordPlacement func(ctx context.Context, rec modules.Placed) error
	// RecordSuspended, when set, writes a tenant's suspension to the store
	// that modules.LifecycleConfig.Suspended reads before an offboard
	// removes anything (modules.OffboardOptions.RecordSuspended), so every
	// replica, and a process started after a crash mid-offboard, refuses
	// the tenant until a rerun completes it. Nil: the suspension is this
	// replica's only.
	RecordSuspended func(ctx context.Context, tenant tenancy.ID) error
}

// defaultDrainWait is Config.DrainWait's default.
const defaultDrainWait = 30 * time.Second

// The list's page size: defaultLimit when the request names none, at most
// maxLimit, so one request never returns an unbounded body.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// Module mounts the tenant endpoints on the operator listener (never on
// the tenant listener, where they answer 404):
//
//	GET  /tenants?after={id}&limit={n}    tenants of the registry, by id, each with suspended
//	GET  /tenants/{id}                    registry state, suspended, each module's part
//	POST /tenants/{id}/provision[?dry_run=1]
//	POST /tenants/{id}/suspend
//	POST /tenants/{id}/resume
//	POST /tenants/{id}/offboard?confirm={id}   or ?dry_run=1
//	GET  /tenants/{id}/export             the tenant's archive (docs/archive.md), streamed
//	POST /tenants/{id}/import             an archive as the body, Content-Type application/x-ndjson
//	POST /tenants/{id}/move?module={m}&to={tier}[&dry_run=1]   the tenant's data to another placement (docs/tiered-tenancy.md)
//	POST /tenants/{id}/cleanup?module={m}&from={tier}          the old copy a move left, erased and checked
//
// The operator listener refuses a foreign Host, Origin or Sec-Fetch-Site
// before any of them runs (tenanthttp.Config.OperatorHosts). Every request
// then passes the guard (guard.go): the Token or Authenticate when set,
// and on a POST "Content-Type: application/json" with an empty body (or
// {}), so no web page can send one. Parameters are read strictly: a
// query that does not parse whole, repeats or misspells a parameter is
// refused with operator_request_invalid and runs nothing.
//
// Without modules.Lifecycle in the app, or with no Config.Registry, the
// app is refused at fx.New with tenant_admin_unwired.
func Module(cfg Config) fx.Option {
	eps, err := mounted(cfg.Off)
	if err != nil {
		return fx.Error(err)
	}
	opts := []fx.Option{
		fx.Provide(fx.Private, func(p params, live modules.Live) (*admin, error) { return newAdmin(cfg, p, live) }),
		// Build it even in an app without tenanthttp, so a missing
		// Lifecycle is refused in every app that includes the module.
		fx.Invoke(func(*admin) {}),
	}
	for _, e := range eps {
		opts = append(opts, tenanthttp.RouteWithYield(e.pattern, tenanthttp.Operator, func(a *admin) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if q, ok := a.guard(e, w, r); ok {
					e.handle(a, w, r, q)
				}
			})
		}))
	}
	return fx.Module("tenantadmin", opts...)
}

type params struct {
	fx.In
	Tenants *modules.Tenants `optional:"true"`
	// Telemetry holds the heavy-hitters view GET /tenants/top reads.
	Telemetry *telemetry.Telemetry `optional:"true"`
}

type admin struct {
	tenants *modules.Tenants
	reg     migrate.Registry
	// all is every module of the app, sorted, for the status's per-module
	// lines: a module with no lifecycle part is listed as taking none.
	all []modules.Part
	// step serialises this replica's provision and offboard runs, so an
	// operator's retry never runs beside the run it retries.
	step sync.Mutex
	// The guard's settings (Config.Token, Authenticate).
	token        string
	authenticate func(*http.Request) error
	drainWait    time.Duration
	tel          *telemetry.Telemetry
	// record is Config.RecordPlacement, recordSuspended Config.RecordSuspended.
	record          func(ctx context.Context, rec modules.Placed) error
	recordSuspended func(ctx context.Context, tenant tenancy.ID) error
}

func newAdmin(cfg Config, p params, live modules.Live) (*admin, error) {
	var errs []error
	if p.Tenants == nil {
		errs = append(errs, &tenancy.Error{
			Code: tenancy.CodeTenantAdminUnwired, Module: "tenantadmin",
			Detail: "the app has no modules.Lifecycle(), so there is no step to run and no suspension to set",
			Fix:    "add modules.Lifecycle() to the app's options",
		})
	}
	if cfg.Registry == nil {
		errs = append(errs, &tenancy.Error{
			Code: tenancy.CodeTenantAdminUnwired, Module: "tenantadmin",
			Detail: "tenantadmin.Config.Registry is nil, so GET /tenants has no tenants to list",
			Fix:    "set Config.Registry (postgres.NewRegistry, or migrate.NewMemoryRegistry filled from configuration) and give the same registry to the modules (modules.TenantRegistry)",
		})
	}
	if cfg.DrainWait < 0 {
		errs = append(errs, &tenancy.Error{
			Code: tenancy.CodeTenantAdminUnwired, Module: "tenantadmin",
			Detail: fmt.Sprintf("tenantadmin.Config.DrainWait is %v: an offboard could never wait for the tenant's calls in flight", cfg.DrainWait),
			Fix:    "set Config.DrainWait to 0 (30s) or a positive duration",
		})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	a := &admin{tenants: p.Tenants, reg: cfg.Registry, token: cfg.Token, authenticate: cfg.Authenticate, drainWait: cmp.Or(cfg.DrainWait, defaultDrainWait), tel: p.Telemetry, record: cfg.RecordPlacement, recordSuspended: cfg.RecordSuspended}
	parts := p.Tenants.Parts()
	a.all = slices.Clone(parts)
	for _, w := range live.Wirings {
		if !slices.ContainsFunc(parts, func(x modules.Part) bool { return x.Module == w.Module.Name }) {
			a.all = append(a.all, modules.Part{Module: w.Module.Name, Backend: w.Module.Backend.Name})
		}
	}
	slices.SortFunc(a.all, func(x, y modules.Part) int { return strings.Compare(x.Module, y.Module) })
	return a, nil
}

func (a *admin) list(w http.ResponseWriter, r *http.Request, q query) {
	limit := defaultLimit
	if s, set := q["limit"]; set {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit || strconv.Itoa(n) != s {
			refuse(w, invalid(r.Pattern, fmt.Sprintf("limit %q is not a number from 1 to %d", s, maxLimit)))
			return
		}
		limit = n
	}
	var after tenancy.ID
	if s, set := q["after"]; set {
		id, err := tenancy.ParseID(s)
		if err != nil {
			refuse(w, invalid(r.Pattern, "after "+strconv.Quote(s)+" is not a tenant id"))
			return
		}
		after = id
	}
	all, err := a.reg.List(r.Context())
	if err != nil {
		refuse(w, registryDown(err))
		return
	}
	// Order by id here, whatever the registry's order, so that after is a
	// cursor that neither skips nor repeats a tenant.
	slices.SortFunc(all, func(x, y migrate.Tenant) int { return compareID(x.ID, y.ID) })
	page := listPage{Tenants: []tenantEntry{}}
	for _, t := range all {
		if !after.IsZero() && compareID(t.ID, after) <= 0 {
			continue
		}
		if len(page.Tenants) == limit {
			page.Next = page.Tenants[limit-1].ID
			break
		}
		page.Tenants = append(page.Tenants, tenantEntry{ID: t.ID.String(), State: string(t.State), Suspended: a.tenants.Suspended(t.ID)})
	}
	reply(w, http.StatusOK, page)
}

func compareID(x, y tenancy.ID) int {
	xb, yb := x.Bytes(), y.Bytes()
	return bytes.Compare(xb[:], yb[:])
}

func (a *admin) status(w http.ResponseWriter, r *http.Request, _ query) {
	id, ok := tenantOf(w, r)
	if !ok {
		return
	}
	all, err := a.reg.List(r.Context())
	if err != nil {
		refuse(w, registryDown(err))
		return
	}
	st := tenantStatus{ID: id.String(), Suspended: a.tenants.Suspended(id), Modules: make([]modulePart, 0, len(a.all))}
	for _, t := range all {
		if t.ID == id {
			st.Registered, st.State, st.Versions = true, string(t.State), t.Versions
		}
	}
	for _, p := range a.all {
		st.Modules = append(st.Modules, modulePart{Module: p.Module, Backend: p.Backend, Provision: p.Provisions, Offboard: p.Offboards})
	}
	reply(w, http.StatusOK, st)
}

// tenantAndDryRun reads the request's tenant and ?dry_run=, answering the
// refusal itself when either is wrong (ok false).
func tenantAndDryRun(w http.ResponseWriter, r *http.Request, q query) (id tenancy.ID, dry, ok bool) {
	if id, ok = tenantOf(w, r); !ok {
		return id, false, false
	}
	dry, err := dryRun(r.Pattern, q)
	if err != nil {
		refuse(w, err)
		return id, false, false
	}
	return id, dry, true
}

func (a *admin) provision(w http.ResponseWriter, r *http.Request, q query) {
	id, dry, ok := tenantAndDryRun(w, r, q)
	if !ok {
		return
	}
	if dry {
		a.plan(w, id, "provision", func(p modules.Part) (bool, string) {
			if !p.Provisions {
				return false, modules.SkippedNothingToCreate
			}
			return true, ""
		})
		return
	}
	a.step.Lock()
	defer a.step.Unlock()
	rep, err := a.tenants.Provision(r.Context(), id)
	a.report(w, id, "provision", rep, err)
}

func (a *admin) offboard(w http.ResponseWriter, r *http.Request, q query) {
	id, dry, ok := tenantAndDryRun(w, r, q)
	if !ok {
		return
	}
	confirm, confirmed := q["confirm"]
	if dry && confirmed {
		refuse(w, invalid(r.Pattern, "dry_run=1 and confirm are both given; a dry run needs no confirmation and a real run no dry_run"))
		return
	}
	if dry {
		a.plan(w, id, "offboard", func(p modules.Part) (bool, string) {
			if !p.Offboards {
				return false, modules.SkippedNoTeardown
			}
			return true, ""
		})
		return
	}
	var confirms []string
	if confirmed {
		confirms = []string{confirm}
	}
	if err := confirmOffboard(id, confirms); err != nil {
		refuse(w, err)
		return
	}
	a.step.Lock()
	defer a.step.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), a.drainWait)
	defer cancel()
	rep, err := a.tenants.OffboardWith(ctx, id, modules.OffboardOptions{RecordSuspended: a.recordSuspended})
	a.report(w, id, "offboard", rep, err)
}

// confirmOffboard checks an offboard's confirmation: exactly one value, the
// tenant's own id (in either case), or offboard_unconfirmed.
func confirmOffboard(id tenancy.ID, confirm []string) error {
	if len(confirm) == 1 {
		if c, err := tenancy.ParseID(confirm[0]); err == nil && c == id {
			return nil
		}
	}
	return &tenancy.Error{
		Code: tenancy.CodeOffboardUnconfirmed, Module: "tenantadmin",
		Detail: "offboarding removes tenant " + id.String() + "'s data and needs that id repeated once as confirm; nothing was changed",
		Fix:    "add confirm=" + id.String() + " (or run it with dry_run=1 first to see what would run)",
	}
}

func (a *admin) suspend(w http.ResponseWriter, r *http.Request, _ query) {
	a.toggle(w, r, "suspend", a.tenants.Suspend)
}

func (a *admin) resume(w http.ResponseWriter, r *http.Request, _ query) {
	a.toggle(w, r, "resume", a.tenants.Resume)
}

// toggle runs suspend or resume: one switch in this replica that every
// module's routes read, so its report has no module lines.
func (a *admin) toggle(w http.ResponseWriter, r *http.Request, step string, set func(tenancy.ID)) {
	id, ok := tenantOf(w, r)
	if !ok {
		return
	}
	set(id)
	reply(w, http.StatusOK, stepResult{Tenant: id.String(), Step: step, OK: true, Suspended: a.tenants.Suspended(id)})
}

func (a *admin) plan(w http.ResponseWriter, id tenancy.ID, step string, runs func(modules.Part) (bool, string)) {
	res := stepResult{Tenant: id.String(), Step: step, DryRun: true, OK: true, Suspended: a.tenants.Suspended(id)}
	for _, p := range a.tenants.Parts() {
		ok, skipped := runs(p)
		res.Plan = append(res.Plan, plannedLine{Module: p.Module, Backend: p.Backend, Runs: ok, Skipped: skipped})
	}
	reply(w, http.StatusOK, res)
}

func (a *admin) report(w http.ResponseWriter, id tenancy.ID, step string, rep modules.Report, err error) {
	res := stepResult{Tenant: id.String(), Step: step, OK: err == nil, Suspended: a.tenants.Suspended(id), Report: make([]reportLine, 0, len(rep))}
	if step == "offboard" && len(rep) > 0 {
		p := rep.Proof(id)
		res.Proof = &p
	}
	for _, l := range rep {
		line := reportLine{Module: l.Module, Backend: l.Backend, OK: l.Err == nil, Skipped: l.Skipped}
		for _, f := range l.Checked {
			line.Checked = append(line.Checked, familyLine(f))
		}
		for _, f := range l.Left {
			line.Left = append(line.Left, fmt.Sprintf("%s: %d left, e.g. %s", familyLine(f.Family), f.Count, f.Sample))
		}
		if l.Err != nil {
			// A module's failure may be uncoded (a routed module's
			// resolver that does not know the tenant answers its own
			// error): its line still names a code.
			line.Error, line.Code = l.Err.Error(), string(cmp.Or(tenancy.CodeOf(l.Err), tenancy.CodeTenantStepFailed))
		}
		res.Report = append(res.Report, line)
	}
	// A module failing its part is the step's outcome, reported line by
	// line, not a fault of the surface: 409, never a 500.
	status := http.StatusOK
	if err != nil {
		status, res.Code, res.Error = http.StatusConflict, string(tenancy.CodeTenantStepFailed), err.Error()
		// The step's own refusals name themselves.
		for _, c := range []tenancy.Code{tenancy.CodeTenantErasureIncomplete, tenancy.CodeTenantDrainTimeout, tenancy.CodeTenantMoveRefused, tenancy.CodeTenantPlacementInvalid} {
			if slices.Contains(tenancy.Codes(err), c) {
				res.Code = string(c)
			}
		}
	}
	reply(w, status, res)
}

// familyLine is a verified family as a report line shows it.
func familyLine(f modules.Family) string {
	return fmt.Sprintf("%s %s at %s", f.Kind, f.Name, f.Where)
}

// tenantOf reads the path's tenant id: canonical UUIDs only.
func tenantOf(w http.ResponseWriter, r *http.Request) (tenancy.ID, bool) {
	id, err := parseTenant(r.PathValue("id"))
	if err != nil {
		refuse(w, err)
		return tenancy.ID{}, false
	}
	return id, true
}

// parseTenant is tenancy.ParseID with the operator surface's refusal,
// tenant_id_invalid.
func parseTenant(s string) (tenancy.ID, error) {
	id, err := tenancy.ParseID(s)
	if err != nil {
		return tenancy.ID{}, &tenancy.Error{
			Code: tenancy.CodeTenantIDInvalid, Module: "tenantadmin",
			Detail: fmt.Sprintf("%q is not a tenant id (%v)", s, err),
			Fix:    "name the tenant by its canonical 8-4-4-4-12 hex UUID, as GET /tenants lists it",
		}
	}
	return id, nil
}

func invalid(route, detail string) error {
	return &tenancy.Error{
		Code: tenancy.CodeOperatorRequestInvalid, Module: "tenantadmin", Route: route, Detail: detail + "; nothing was changed",
		Fix: "give each parameter once, in the query string only, spelt exactly: dry_run=1 on provision, offboard and move, confirm={id} on offboard, module and to (or from) on move (cleanup), after (a tenant id) and limit (1 to " + strconv.Itoa(maxLimit) + ") on the list",
	}
}

func registryDown(err error) error {
	return &tenancy.Error{
		Code: tenancy.CodeTenantRegistryUnavailable, Module: "tenantadmin",
		Detail: "the tenant registry could not be read: " + err.Error(),
		Fix:    "check the registry's server and retry",
	}
}

// refuse answers a coded refusal as JSON: 403 for a request the guard
// forbids, 400 for a request's own fault, 503 for an unreadable registry.
func refuse(w http.ResponseWriter, err error) {
	var e *tenancy.Error
	if !errors.As(err, &e) {
		e = &tenancy.Error{Code: tenancy.CodeOperatorRequestInvalid, Detail: err.Error()}
	}
	status := http.StatusBadRequest
	switch e.Code {
	case tenancy.CodeTenantRegistryUnavailable:
		status = http.StatusServiceUnavailable
	case tenancy.CodeOperatorRequestForbidden:
		status = http.StatusForbidden
	}
	reply(w, status, errorBody{Error: e.Detail, Code: string(e.Code), Fix: e.Fix})
}

func reply(w http.ResponseWriter, status int, body any) {
	b, _ := json.Marshal(body) // plain structs of strings, bools and maps: never fails
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
