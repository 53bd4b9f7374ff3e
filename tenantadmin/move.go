package tenantadmin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// moveResult is the answer of POST /tenants/{id}/move.
type moveResult struct {
	Tenant  string     `json:"tenant"`
	Module  string     `json:"module"`
	From    string     `json:"from"`
	To      string     `json:"to"`
	OK      bool       `json:"ok"`
	DryRun  bool       `json:"dry_run,omitempty"`
	Records int64      `json:"records"`
	FenceMS int64      `json:"write_fence_ms"`
	Steps   []moveLine `json:"steps"`
	Error   string     `json:"error,omitempty"`
	Code    string     `json:"code,omitempty"`
	Fix     string     `json:"fix,omitempty"`
}

type moveLine struct {
	Step   string  `json:"step"`
	MS     float64 `json:"ms"`
	Detail string  `json:"detail,omitempty"`
}

// placementOf reads a tier parameter (tagged, namespace, dedicated).
func placementOf(route, name, v string) (tenancy.Tier, error) {
	var t tenancy.Tier
	if err := t.UnmarshalText([]byte(v)); err != nil || t == tenancy.None {
		return 0, invalid(route, fmt.Sprintf("%s %q is not a placement (tagged, namespace or dedicated)", name, v))
	}
	return t, nil
}

// move moves the tenant in ?module= to ?to=, or with ?dry_run=1 lists the
// steps it would take.
func (a *admin) move(w http.ResponseWriter, r *http.Request, q query) {
	id, dry, ok := tenantAndDryRun(w, r, q)
	if !ok {
		return
	}
	module, to, err := moveParams(r.Pattern, q, "to")
	if err != nil {
		refuse(w, err)
		return
	}
	a.step.Lock()
	defer a.step.Unlock()
	rep, err := a.tenants.Move(r.Context(), id, module, to, modules.MoveOptions{DryRun: dry, Record: a.record})
	res := moveResult{Tenant: id.String(), Module: module, From: rep.From.String(), To: to.String(), OK: err == nil, DryRun: dry,
		Records: rep.Records, FenceMS: rep.Fenced.Milliseconds()}
	for _, s := range rep.Steps {
		res.Steps = append(res.Steps, moveLine{Step: s.Step, MS: float64(s.Ended.Sub(s.Started)) / float64(time.Millisecond), Detail: s.Detail})
	}
	status := http.StatusOK
	if err != nil {
		status, res.Error, res.Code = http.StatusConflict, err.Error(), string(tenancy.CodeOf(err))
		if e, ok := err.(*tenancy.Error); ok {
			res.Fix = e.Fix
		}
		if res.Code == "" {
			res.Code = string(tenancy.CodeTenantStepFailed)
		}
	}
	reply(w, status, res)
}

// cleanupMove removes the old copy ?from= a move left in ?module=.
func (a *admin) cleanupMove(w http.ResponseWriter, r *http.Request, q query) {
	id, ok := tenantOf(w, r)
	if !ok {
		return
	}
	module, from, err := moveParams(r.Pattern, q, "from")
	if err != nil {
		refuse(w, err)
		return
	}
	a.step.Lock()
	defer a.step.Unlock()
	rep, err := a.tenants.CleanupMove(r.Context(), id, module, from)
	a.report(w, id, "cleanup", rep, err)
}

func moveParams(route string, q query, tier string) (string, tenancy.Tier, error) {
	module := q["module"]
	if module == "" {
		return "", 0, invalid(route, "module is missing: name the module whose placement changes")
	}
	v, set := q[tier]
	if !set {
		return "", 0, invalid(route, tier+" is missing: name the placement (tagged, namespace or dedicated)")
	}
	t, err := placementOf(route, tier, v)
	return module, t, err
}

// moveCommand runs move and cleanup-move: move <id> --module M --to T
// [--dry-run]; cleanup-move <id> --module M --from T.
func (r Remote) moveCommand(ctx context.Context, base *url.URL, cmd string, rest []string, out io.Writer) error {
	id, flags, err := tenantArgs(cmd, rest)
	if err != nil {
		return err
	}
	tier, path := "--to", "/move"
	if cmd == "cleanup-move" {
		tier, path = "--from", "/cleanup"
	}
	q := url.Values{}
	for name, v := range flags {
		switch {
		case name == "--module" || name == tier:
			q.Set(name[2:], v)
		case name == "--dry-run" && cmd == "move" && v == "":
			q.Set("dry_run", "1")
		default:
			return usage(fmt.Sprintf("%s takes --module <name> and %s <placement>%s", cmd, tier, map[bool]string{true: " [--dry-run]"}[cmd == "move"]))
		}
	}
	if q.Get("module") == "" || q.Get(tier[2:]) == "" {
		return usage(fmt.Sprintf("%s needs --module <name> and %s <placement>", cmd, tier))
	}
	body, err := r.call(ctx, http.MethodPost, at(base, "/tenants/"+id.String()+path, q))
	if body != nil {
		_, _ = out.Write(body)
	}
	return err
}
