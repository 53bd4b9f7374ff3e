package tenantadmin

import (
	"net/http"
	"time"

	"github.com/tenantwire/tenantwire/telemetry"
)

// topBody is GET /tenants/top: every route's heavy hitters, or enabled
// false when the app's telemetry keeps none (telemetry.Config.Top).
type topBody struct {
	Enabled bool       `json:"enabled"`
	Routes  []topRoute `json:"routes"`
}

type topRoute struct {
	Backend  string    `json:"backend"`
	Module   string    `json:"module"`
	Route    string    `json:"route"`
	Previous topWindow `json:"previous"`
	Current  topWindow `json:"current"`
}

type topWindow struct {
	Start   time.Time   `json:"start"`
	End     time.Time   `json:"end"`
	Calls   int64       `json:"calls"`
	Tenants []topTenant `json:"tenants"`
}

// topTenant is one tenant's estimate: its true call count is in
// [calls-over, calls].
type topTenant struct {
	Tenant string  `json:"tenant"`
	Calls  int64   `json:"calls"`
	Over   int64   `json:"over"`
	Errors int64   `json:"errors"`
	TimeMs float64 `json:"time_ms"`
}

func (a *admin) top(w http.ResponseWriter, _ *http.Request, _ query) {
	routes := a.tel.TopTenants()
	body := topBody{Enabled: routes != nil, Routes: make([]topRoute, 0, len(routes))}
	for _, r := range routes {
		body.Routes = append(body.Routes, topRoute{Backend: r.Backend, Module: r.Module, Route: r.Route,
			Previous: windowOf(r.Previous), Current: windowOf(r.Current)})
	}
	reply(w, http.StatusOK, body)
}

func windowOf(w telemetry.TopWindow) topWindow {
	out := topWindow{Start: w.Start, End: w.End, Calls: w.Calls, Tenants: make([]topTenant, 0, len(w.Tenants))}
	for _, t := range w.Tenants {
		out.Tenants = append(out.Tenants, topTenant{Tenant: t.Tenant.String(), Calls: t.Calls, Over: t.Over, Errors: t.Errors,
			TimeMs: float64(t.Time) / float64(time.Millisecond)})
	}
	return out
}
