package tenanthttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/telemetry"
)

// Module is the HTTP boundary as an fx module. During fx.New it refuses a
// tenant header name no request can carry (tenant_source_invalid), header
// or host mode without a trusted proxy (trusted_proxy_required), any
// unclassified route (route_unclassified), any bad or conflicting pattern
// (route_invalid), any route that would answer for an operator or
// blocked one (route_class_overlap) and an OperatorHosts entry that is not
// a host (operator_hosts_invalid), before any listener opens. The
// listeners open in OnStart and close in OnStop, with the Config's limits.
// Inject *Server for their addresses.
func Module(cfg Config) fx.Option {
	return fx.Module("tenanthttp",
		fx.Provide(func() *Server { return &Server{cfg: cfg} }),
		fx.Invoke(wire),
	)
}

// ReadyTimeout bounds each module's readiness check behind GET /readyz.
const ReadyTimeout = 2 * time.Second

// Server holds the two listeners of the boundary.
type Server struct {
	cfg      Config
	log      *slog.Logger
	tenant   http.Server
	operator http.Server
	lis      Listeners
}

type wireParams struct {
	fx.In

	Server    *Server
	Routes    []routeDef `group:"tenanthttp_routes"`
	Live      modules.Live
	Ready     modules.Readiness
	Logger    *slog.Logger `optional:"true"`
	Lifecycle fx.Lifecycle
	// Telemetry traces each request on both listeners (nil: none).
	Telemetry *telemetry.Telemetry `optional:"true"`
}

// wire runs during fx.New: every refusal is returned from here, so an app
// that is refused never reaches OnStart.
func wire(p wireParams) error {
	s, cfg := p.Server, p.Server.cfg
	res, err := NewResolver(cfg)
	if err != nil {
		return err
	}
	res.tel = p.Telemetry
	hosts, err := cfg.operatorHosts()
	if err != nil {
		return err
	}
	health, err := json.Marshal(struct {
		Status       string `json:"status"`
		Mode         string `json:"mode"`
		HeaderMode   bool   `json:"header_mode"`
		Header       string `json:"header,omitempty"`
		TrustedProxy bool   `json:"trusted_proxy"`
		HostMode     bool   `json:"host_mode"`
		ClaimMode    bool   `json:"claim_mode"`
	}{"ok", cfg.Mode(), !cfg.HeaderOff, headerIf(cfg), cfg.TrustedProxy, cfg.Host != nil, cfg.Claim != nil})
	if err != nil {
		return err
	}
	live, ready := p.Live, p.Ready
	routes := append(slices.Clone(p.Routes),
		routeDef{Pattern: "GET /readyz", Class: Operator, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ok, checks := ready.Check(r.Context(), ReadyTimeout)
			body, err := json.Marshal(struct {
				Ready  bool                  `json:"ready"`
				Checks []modules.ReadyResult `json:"checks"`
			}{ok, checks})
			if err != nil {
				http.Error(w, "readiness unavailable", http.StatusInternalServerError)
				return
			}
			status := http.StatusOK
			if !ok {
				status = http.StatusServiceUnavailable
			}
			writeJSON(w, status, string(body))
		})},
		routeDef{Pattern: "GET /healthz", Class: Operator, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, string(health))
		})},
		routeDef{Pattern: "GET /tenancy/matrix", Class: Operator, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			var b bytes.Buffer
			if err := live.Matrix().WriteJSON(&b); err != nil {
				http.Error(w, "matrix unavailable", http.StatusInternalServerError)
				return
			}
			writeJSON(w, http.StatusOK, b.String())
		})},
	)
	m, err := buildMuxes(routes, res)
	if err != nil {
		return err
	}
	th := m.tenant
	for i := len(cfg.Wrap) - 1; i >= 0; i-- {
		th = cfg.Wrap[i](th)
	}
	// Outermost, so the request's span covers the app's own middleware.
	th = p.Telemetry.HTTP("tenant", th)
	s.log = p.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	errLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	s.tenant = cfg.server(th, errLog)
	// Outermost: a request a browser could have sent reaches no operator
	// handler, nor the app's telemetry.
	s.operator = cfg.server(operatorGuard{hosts: hosts, next: p.Telemetry.HTTP("operator", m.operator, "/healthz", "/readyz", "/metrics")}, errLog)
	s.log.Info("tenanthttp: tenant resolution", "mode", cfg.Mode(), "header", headerIf(cfg),
		"trusted_proxy", cfg.TrustedProxy, "require_tenant", cfg.RequireTenant, "admission", cfg.Admission != nil, "routes", len(p.Routes), "operator_hosts", cfg.operatorHostNames())
	p.Lifecycle.Append(fx.Hook{OnStart: s.start, OnStop: s.stop})
	return nil
}

func headerIf(cfg Config) string {
	if cfg.HeaderOff {
		return ""
	}
	return cfg.headerName()
}

func (s *Server) start(context.Context) error {
	tl, ol, err := s.lis.Open("tenanthttp", s.log, s.cfg.tenantAddr(), s.cfg.operatorAddr())
	if err != nil {
		return err
	}
	s.lis.Serve("tenant", func() error { return serveUntilClosed(&s.tenant, tl) })
	s.lis.Serve("operator", func() error { return serveUntilClosed(&s.operator, ol) })
	return nil
}

// serveUntilClosed serves l; nil when stop closed the server.
func serveUntilClosed(srv *http.Server, l net.Listener) error {
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// stop drains both listeners and waits for their goroutines, so nothing
// of the boundary outlives the app.
func (s *Server) stop(ctx context.Context) error {
	err := errors.Join(s.tenant.Shutdown(ctx), s.operator.Shutdown(ctx))
	if err != nil {
		// The deadline passed with requests still running: cut them.
		err = errors.Join(err, s.tenant.Close(), s.operator.Close())
	}
	s.lis.Wait()
	return err
}

// TenantHandler is the tenant listener's handler (Wrap, routing, tenant
// resolution), for tests that drive it without a listener. Valid after
// fx.New succeeded.
func (s *Server) TenantHandler() http.Handler { return s.tenant.Handler }

// OperatorHandler is the operator listener's handler, its Host and Origin
// check included: a test request needs a Host of Config.OperatorHosts
// (r.Host = "localhost"). Valid after fx.New succeeded.
func (s *Server) OperatorHandler() http.Handler { return s.operator.Handler }

// TenantAddr is the tenant listener's address once the app has started.
func (s *Server) TenantAddr() string { return s.lis.TenantAddr() }

// OperatorAddr is the operator listener's address once the app has started.
func (s *Server) OperatorAddr() string { return s.lis.OperatorAddr() }
