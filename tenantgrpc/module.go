package tenantgrpc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"

	"go.uber.org/fx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// Module is the gRPC boundary as an fx module. During fx.New it refuses a
// tenant key no call can carry as text (tenant_source_invalid), metadata
// mode without a trusted proxy (trusted_proxy_required), any unclassified
// method (route_unclassified) and any service gRPC could not register
// (route_invalid), before any listener opens. The two servers are built
// and their listeners opened in OnStart, and stopped gracefully in OnStop.
// Inject *Server for their addresses.
func Module(cfg Config) fx.Option {
	return fx.Module("tenantgrpc",
		fx.Provide(func() *Server { return &Server{cfg: cfg} }),
		fx.Invoke(wire),
	)
}

// serviceDef is one service registered with the module: its descriptor,
// its implementation, and the class of each of its methods and streams.
type serviceDef struct {
	Desc *grpc.ServiceDesc
	Impl any
	// Class is the class of every method and stream Methods does not name;
	// zero means none, and each must then be named in Methods.
	Class Class
	// Methods classifies single methods or streams by name ("Get", as in
	// the descriptor), overriding Class.
	Methods []Method
}

// Method is the class of one method or stream of a service.
type Method struct {
	Name  string
	Class Class
}

type serviceOut struct {
	fx.Out
	Service serviceDef `group:"tenantgrpc_services"`
}

// Service registers a service with the module. Every method and stream
// must end up classified: class covers those methods does not name, and
// any left unclassified is refused with route_unclassified during fx.New,
// so a method added to the descriptor later cannot be served unclassified.
func Service(desc *grpc.ServiceDesc, impl any, class Class, methods ...Method) fx.Option {
	d := serviceDef{Desc: desc, Impl: impl, Class: class, Methods: methods}
	return fx.Provide(func() serviceOut { return serviceOut{Service: d} })
}

// ServiceWith registers a service whose implementation is built from the
// graph: deps is any type fx can supply, including an fx.In struct.
func ServiceWith[D any](desc *grpc.ServiceDesc, class Class, build func(deps D) any, methods ...Method) fx.Option {
	return fx.Provide(func(deps D) serviceOut {
		return serviceOut{Service: serviceDef{Desc: desc, Impl: build(deps), Class: class, Methods: methods}}
	})
}

// Server holds the two servers of the boundary.
type Server struct {
	cfg     Config
	log     *slog.Logger
	res     *Resolver
	classes map[string]Class // full method name → class
	// regs are the services each server registers, methods filtered to
	// the server's class.
	tenantRegs, operatorRegs []registration
	tenant, operator         *grpc.Server
	lis                      tenanthttp.Listeners
}

type registration struct {
	desc *grpc.ServiceDesc
	impl any
}

type wireParams struct {
	fx.In

	Server    *Server
	Services  []serviceDef `group:"tenantgrpc_services"`
	Logger    *slog.Logger `optional:"true"`
	Lifecycle fx.Lifecycle
	Telemetry *telemetry.Telemetry `optional:"true"`
}

// wire runs during fx.New: every refusal is returned from here, so an app
// that is refused never reaches OnStart and no server is built.
func wire(p wireParams) error {
	s := p.Server
	res, err := NewResolver(s.cfg)
	if err != nil {
		return err
	}
	if err := s.plan(p.Services); err != nil {
		return err
	}
	res.tel = p.Telemetry
	s.res = res
	s.log = cmp.Or(p.Logger, slog.Default())
	s.log.Info("tenantgrpc: tenant resolution", "mode", s.cfg.Mode(), "key", keyIf(s.cfg),
		"trusted_proxy", s.cfg.TrustedProxy, "require_tenant", s.cfg.RequireTenant, "admission", s.cfg.Admission != nil, "methods", len(s.classes))
	p.Lifecycle.Append(fx.Hook{OnStart: s.start, OnStop: s.stop})
	return nil
}

func keyIf(cfg Config) string {
	if cfg.KeyOff {
		return ""
	}
	return cfg.key()
}

// plan classifies every method of every service and splits the services
// onto the two servers. It refuses here what grpc.Server.RegisterService
// would end the process for (an implementation of the wrong type, a
// service registered twice).
func (s *Server) plan(defs []serviceDef) error {
	defs = slices.Clone(defs)
	slices.SortStableFunc(defs, func(a, b serviceDef) int { return cmp.Compare(serviceName(a), serviceName(b)) })
	s.classes = map[string]Class{}
	seen := map[string]bool{}
	var errs []error
	for _, d := range defs {
		if d.Desc == nil {
			errs = append(errs, serviceInvalid("", "a service was registered with a nil ServiceDesc", "pass the service's descriptor (the generated _ServiceDesc)"))
			continue
		}
		name := d.Desc.ServiceName
		if seen[name] {
			errs = append(errs, serviceInvalid(name, "the service is registered twice", "register each service once; classify its methods with Method entries"))
			continue
		}
		seen[name] = true
		classes, cerrs := classify(d)
		if len(cerrs) > 0 {
			errs = append(errs, cerrs...)
			continue
		}
		if err := checkImpl(d, classes); err != nil {
			errs = append(errs, err)
			continue
		}
		for full, c := range classes {
			s.classes[full] = c
		}
		if r, ok := filtered(d, classes, Tenant); ok {
			s.tenantRegs = append(s.tenantRegs, r)
		}
		if r, ok := filtered(d, classes, Operator); ok {
			s.operatorRegs = append(s.operatorRegs, r)
		}
	}
	return errors.Join(errs...)
}

func serviceName(d serviceDef) string {
	if d.Desc == nil {
		return ""
	}
	return d.Desc.ServiceName
}

func fullMethod(service, method string) string { return "/" + service + "/" + method }

// classify gives every method and stream of d its class.
func classify(d serviceDef) (map[string]Class, []error) {
	name := d.Desc.ServiceName
	var errs []error
	declared := map[string]bool{}
	var methods []string
	for _, m := range d.Desc.Methods {
		methods = append(methods, m.MethodName)
	}
	for _, st := range d.Desc.Streams {
		methods = append(methods, st.StreamName)
	}
	for _, m := range methods {
		if declared[m] {
			errs = append(errs, serviceInvalid(fullMethod(name, m), "the descriptor declares the method twice", "fix the service descriptor"))
		}
		declared[m] = true
	}
	override := map[string]Class{}
	for _, m := range d.Methods {
		switch _, dup := override[m.Name]; {
		case !declared[m.Name]:
			errs = append(errs, serviceInvalid(fullMethod(name, m.Name), "a Method entry names a method or stream the service does not declare", "name methods as the descriptor does (\"Get\", not \"/pkg.Service/Get\")"))
		case dup:
			errs = append(errs, serviceInvalid(fullMethod(name, m.Name), "two Method entries name the method", "classify each method once"))
		}
		override[m.Name] = m.Class
	}
	classes := map[string]Class{}
	for _, m := range methods {
		c, ok := override[m]
		if !ok {
			c = d.Class
		}
		full := fullMethod(name, m)
		if !validClass(c) {
			errs = append(errs, &tenancy.Error{
				Code:   tenancy.CodeRouteUnclassified,
				Module: "tenantgrpc",
				Route:  full,
				Detail: "the method has no surface class, so no listener may serve it",
				Fix:    "give the service a class or the method a Method entry: tenantgrpc.Tenant, tenantgrpc.Operator or tenantgrpc.Blocked",
			})
			continue
		}
		classes[full] = c
	}
	return classes, errs
}

// checkImpl refuses an implementation gRPC would refuse by ending the
// process: one that does not implement the descriptor's handler type.
func checkImpl(d serviceDef, classes map[string]Class) error {
	served := false
	for _, c := range classes {
		served = served || c != Blocked
	}
	ht := reflect.TypeOf(d.Desc.HandlerType)
	if ht == nil || ht.Kind() != reflect.Pointer || ht.Elem().Kind() != reflect.Interface {
		return serviceInvalid(d.Desc.ServiceName, fmt.Sprintf("the descriptor's HandlerType is %v, not a pointer to an interface", ht), "use the generated descriptor, or set HandlerType to (*YourServer)(nil)")
	}
	if !served {
		return nil
	}
	if d.Impl == nil {
		return serviceInvalid(d.Desc.ServiceName, "the service serves methods and has no implementation", "pass the implementation, or classify every method Blocked")
	}
	if it := reflect.TypeOf(d.Impl); !it.Implements(ht.Elem()) {
		return serviceInvalid(d.Desc.ServiceName, fmt.Sprintf("the implementation %v does not implement %v", it, ht.Elem()), "pass an implementation of the descriptor's handler type")
	}
	return nil
}

// filtered is d's descriptor with only the methods of class c, or false
// when it has none: a method of another class is not registered on that
// server at all, so gRPC answers it Unimplemented.
func filtered(d serviceDef, classes map[string]Class, c Class) (registration, bool) {
	desc := grpc.ServiceDesc{ServiceName: d.Desc.ServiceName, HandlerType: d.Desc.HandlerType, Metadata: d.Desc.Metadata}
	for _, m := range d.Desc.Methods {
		if classes[fullMethod(desc.ServiceName, m.MethodName)] == c {
			desc.Methods = append(desc.Methods, m)
		}
	}
	for _, st := range d.Desc.Streams {
		if classes[fullMethod(desc.ServiceName, st.StreamName)] == c {
			desc.Streams = append(desc.Streams, st)
		}
	}
	return registration{&desc, d.Impl}, len(desc.Methods)+len(desc.Streams) > 0
}

func serviceInvalid(route, detail, fix string) error {
	return &tenancy.Error{Code: tenancy.CodeRouteInvalid, Module: "tenantgrpc", Route: route, Detail: detail, Fix: fix}
}

// gate answers Unimplemented for any method not of class c. Unregistered
// methods never reach it; it covers a handler that gRPC would reach
// without a registration (grpc.UnknownServiceHandler in ServerOptions).
func (s *Server) gate(c Class) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if s.classes[info.FullMethod] != c {
				return nil, unknownMethod(info.FullMethod)
			}
			return h(ctx, req)
		}, func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if s.classes[info.FullMethod] != c {
				return unknownMethod(info.FullMethod)
			}
			return h(srv, ss)
		}
}

func unknownMethod(full string) error {
	return status.Errorf(codes.Unimplemented, "unknown method %s", full)
}

// newServers builds both servers: the caller's options first, so that
// their interceptors (authentication) run before the gate and the tenant
// binding, which run right before the handler.
func (s *Server) newServers() {
	tu, ts := s.gate(Tenant)
	s.tenant = grpc.NewServer(append(slices.Clip(s.cfg.ServerOptions),
		grpc.ChainUnaryInterceptor(tu, s.res.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(ts, s.res.StreamServerInterceptor()))...)
	ou, ostr := s.gate(Operator)
	s.operator = grpc.NewServer(append(slices.Clip(s.cfg.OperatorServerOptions),
		grpc.ChainUnaryInterceptor(ou), grpc.ChainStreamInterceptor(ostr))...)
	for _, r := range s.tenantRegs {
		s.tenant.RegisterService(r.desc, r.impl)
	}
	for _, r := range s.operatorRegs {
		s.operator.RegisterService(r.desc, r.impl)
	}
}

func (s *Server) start(context.Context) error {
	tl, ol, err := s.lis.Open("tenantgrpc", s.log, s.cfg.tenantAddr(), s.cfg.operatorAddr())
	if err != nil {
		return err
	}
	s.newServers()
	s.lis.Serve("tenant", func() error { return s.tenant.Serve(tl) })
	s.lis.Serve("operator", func() error { return s.operator.Serve(ol) })
	return nil
}

// stop drains both servers (GracefulStop: running calls finish, new ones
// are refused) within the stop deadline, then cuts what is left, and waits
// for every goroutine it started, so nothing of the boundary outlives the
// app.
func (s *Server) stop(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		wg.Go(s.tenant.GracefulStop)
		wg.Go(s.operator.GracefulStop)
		wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.tenant.Stop()
		s.operator.Stop()
		<-done
	}
	s.lis.Wait()
	return err
}

// TenantAddr is the tenant listener's address once the app has started.
func (s *Server) TenantAddr() string { return s.lis.TenantAddr() }

// OperatorAddr is the operator listener's address once the app has started.
func (s *Server) OperatorAddr() string { return s.lis.OperatorAddr() }

// Class reports the class of a full method name ("/pkg.Service/Method"),
// zero for a method no registered service declares. Valid after fx.New
// succeeded.
func (s *Server) Class(fullMethod string) Class { return s.classes[fullMethod] }
