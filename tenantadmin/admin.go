// Package tenantadmin is the operator surface for tenants: endpoints on the
// operator listener of tenanthttp that list tenants and provision, suspend,
// resume and offboard one, and Run, which gives an app's main the same
// steps as subcommands sent to a running replica.
package tenantadmin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// Config configures the operator surface.
type Config struct {
	// Registry lists the service's tenants for GET /tenants and GET
	// /tenants/{id}. Required: nil is refused at fx.New. Give the same
	// registry to the modules (postgres.TenantRegistry) so provisioning
	// records tenants and offboarding forgets them.
	Registry migrate.Registry
}

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
//
// Without modules.Lifecycle in the app, or with no Config.Registry, the
// app is refused at fx.New with tenant_admin_unwired.
func Module(cfg Config) fx.Option {
	route := func(pattern string, h func(*admin, http.ResponseWriter, *http.Request)) fx.Option {
		return tenanthttp.RouteWith(pattern, tenanthttp.Operator, func(a *admin) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(a, w, r) })
		})
	}
	return fx.Module("tenantadmin",
		fx.Provide(fx.Private, func(p params, live modules.Live) (*admin, error) { return newAdmin(cfg, p, live) }),
		// Build it even in an app without tenanthttp, so a missing
		// Lifecycle is refused in every app that includes the module.
		fx.Invoke(func(*admin) {}),
		route("GET /tenants", (*admin).list),
		route("GET /tenants/{id}", (*admin).status),
		route("POST /tenants/{id}/provision", (*admin).provision),
		route("POST /tenants/{id}/suspend", (*admin).suspend),
		route("POST /tenants/{id}/resume", (*admin).resume),
		route("POST /tenants/{id}/offboard", (*admin).offboard),
	)
}

type params struct {
	fx.In
	Tenants *modules.Tenants `optional:"true"`
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
			Fix:    "set Config.Registry (postgres.NewRegistry, or migrate.NewMemoryRegistry filled from configuration) and give the same registry to the modules (postgres.TenantRegistry)",
		})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	a := &admin{tenants: p.Tenants, reg: cfg.Registry}
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

// tenantEntry is one tenant of GET /tenants.
type tenantEntry struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Suspended bool   `json:"suspended"`
}

// listPage is GET /tenants: tenants in id order after the request's after;
// Next, when set, is the after of the next page.
type listPage struct {
	Tenants []tenantEntry `json:"tenants"`
	Next    string        `json:"next,omitempty"`
}

// tenantStatus is GET /tenants/{id}.
type tenantStatus struct {
	ID string `json:"id"`
	// Registered: the registry lists the tenant; State and Versions are
	// its entry.
	Registered bool             `json:"registered"`
	State      string           `json:"state,omitempty"`
	Versions   map[string]int64 `json:"versions,omitempty"`
	// Suspended on the replica that answered.
	Suspended bool         `json:"suspended"`
	Modules   []modulePart `json:"modules"`
}

// modulePart is one module's part in the tenant lifecycle.
type modulePart struct {
	Module    string `json:"module"`
	Backend   string `json:"backend"`
	Provision bool   `json:"provision"`
	Offboard  bool   `json:"offboard"`
}

// stepResult is a step's answer: the per-module report, or with DryRun the
// plan, what would run in that order, with nothing changed. Suspend and
// resume have neither: they set one switch of the replica that every
// module's routes read, and run nothing in the modules.
type stepResult struct {
	Tenant string `json:"tenant"`
	Step   string `json:"step"`
	DryRun bool   `json:"dry_run,omitempty"`
	OK     bool   `json:"ok"`
	// Suspended on the replica that answered, after the step (before it,
	// on a dry run).
	Suspended bool          `json:"suspended"`
	Report    []reportLine  `json:"report,omitempty"`
	Plan      []plannedLine `json:"plan,omitempty"`
	// Code and Error are set when a module failed (tenant_step_failed).
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// plannedLine is one module's line of a dry run: it would run, or would be
// skipped for the reason given.
type plannedLine struct {
	Module  string `json:"module"`
	Backend string `json:"backend"`
	Runs    bool   `json:"runs"`
	Skipped string `json:"skipped,omitempty"`
}

// reportLine is one module's line of a report.
type reportLine struct {
	Module  string `json:"module"`
	Backend string `json:"backend"`
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
	Code    string `json:"code,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

// errorBody is every refusal's body: the message, its code and what to do.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	Fix   string `json:"fix,omitempty"`
}

func (a *admin) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if bad := unknownParams(q, "after", "limit"); bad != "" {
		refuse(w, invalid("GET /tenants takes no parameter "+strconv.Quote(bad)))
		return
	}
	limit := defaultLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			refuse(w, invalid(fmt.Sprintf("limit %q is not a number from 1 to %d", s, maxLimit)))
			return
		}
		limit = n
	}
	var after tenancy.ID
	if s := q.Get("after"); s != "" {
		id, err := tenancy.ParseID(s)
		if err != nil {
			refuse(w, invalid("after "+strconv.Quote(s)+" is not a tenant id"))
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

func (a *admin) status(w http.ResponseWriter, r *http.Request) {
	id, ok := tenantOf(w, r)
	if !ok || !noParams(w, r) {
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

func (a *admin) provision(w http.ResponseWriter, r *http.Request) {
	id, ok := tenantOf(w, r)
	if !ok {
		return
	}
	dry, ok := dryRun(w, r, "dry_run")
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

func (a *admin) offboard(w http.ResponseWriter, r *http.Request) {
	id, ok := tenantOf(w, r)
	if !ok {
		return
	}
	dry, ok := dryRun(w, r, "dry_run", "confirm")
	if !ok {
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
	if err := confirmOffboard(id, r.URL.Query()["confirm"]); err != nil {
		refuse(w, err)
		return
	}
	a.step.Lock()
	defer a.step.Unlock()
	rep, err := a.tenants.Offboard(r.Context(), id)
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

func (a *admin) suspend(w http.ResponseWriter, r *http.Request) {
	a.toggle(w, r, "suspend", a.tenants.Suspend)
}

func (a *admin) resume(w http.ResponseWriter, r *http.Request) {
	a.toggle(w, r, "resume", a.tenants.Resume)
}

// toggle runs suspend or resume: one switch in this replica that every
// module's routes read, so its report has no module lines.
func (a *admin) toggle(w http.ResponseWriter, r *http.Request, step string, set func(tenancy.ID)) {
	id, ok := tenantOf(w, r)
	if !ok || !noParams(w, r) {
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
	for _, l := range rep {
		line := reportLine{Module: l.Module, Backend: l.Backend, OK: l.Err == nil, Skipped: l.Skipped}
		if l.Err != nil {
			line.Error, line.Code = l.Err.Error(), string(tenancy.CodeOf(l.Err))
		}
		res.Report = append(res.Report, line)
	}
	status := http.StatusOK
	if err != nil {
		status, res.Code, res.Error = http.StatusInternalServerError, string(tenancy.CodeTenantStepFailed), err.Error()
	}
	reply(w, status, res)
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

// dryRun reads dry_run ("1" or "true"; "0", "false" or absent for a real
// run) and refuses any parameter but allowed, so a misspelt dry run is
// never taken for a real one.
func dryRun(w http.ResponseWriter, r *http.Request, allowed ...string) (dry, ok bool) {
	q := r.URL.Query()
	if bad := unknownParams(q, allowed...); bad != "" {
		refuse(w, invalid(r.Pattern+" takes no parameter "+strconv.Quote(bad)))
		return false, false
	}
	v, set := q["dry_run"]
	if !set {
		return false, true
	}
	if len(v) == 1 {
		switch v[0] {
		case "1", "true":
			return true, true
		case "0", "false":
			return false, true
		}
	}
	refuse(w, invalid(fmt.Sprintf("dry_run %q is none of 1, true, 0, false", strings.Join(v, ","))))
	return false, false
}

func noParams(w http.ResponseWriter, r *http.Request) bool {
	if bad := unknownParams(r.URL.Query()); bad != "" {
		refuse(w, invalid(r.Pattern+" takes no parameter "+strconv.Quote(bad)))
		return false
	}
	return true
}

func unknownParams(q map[string][]string, allowed ...string) string {
	for k := range q {
		if !slices.Contains(allowed, k) {
			return k
		}
	}
	return ""
}

func invalid(detail string) error {
	return &tenancy.Error{
		Code: tenancy.CodeOperatorRequestInvalid, Module: "tenantadmin", Detail: detail + "; nothing was changed",
		Fix: "use dry_run=1 (or true) on provision and offboard only, confirm on offboard only, and after (a tenant id) and limit (1 to " + strconv.Itoa(maxLimit) + ") on the list",
	}
}

func registryDown(err error) error {
	return &tenancy.Error{
		Code: tenancy.CodeTenantRegistryUnavailable, Module: "tenantadmin",
		Detail: "the tenant registry could not be read: " + err.Error(),
		Fix:    "check the registry's server and retry",
	}
}

// refuse answers a coded refusal as JSON: 400 for a request's own fault,
// 503 for an unreadable registry.
func refuse(w http.ResponseWriter, err error) {
	var e *tenancy.Error
	if !errors.As(err, &e) {
		e = &tenancy.Error{Code: tenancy.CodeOperatorRequestInvalid, Detail: err.Error()}
	}
	status := http.StatusBadRequest
	if e.Code == tenancy.CodeTenantRegistryUnavailable {
		status = http.StatusServiceUnavailable
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
