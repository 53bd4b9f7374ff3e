package kafka

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"reflect"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
)

// Option configures a Kafka module.
type Option = modules.Option

// takes is which of the kit's options a Kafka module honours.
var takes = modules.Takes{Teardown: true, ConnBudget: true, Migrations: true}

type config struct {
	modules.Settings
	brokers   []string
	mechanism sasl.Mechanism
	tls       *tls.Config
	routed    *routedConfig
	tune      func(*kafkago.Writer)
	routes    []*routeSpec
	consumers []*consumerSpec
	// wrap wraps the clients' transports (client.wrap): set only by tests.
	wrap func(kafkago.RoundTripper) kafkago.RoundTripper
}

// RoutedConfig bounds the routed clients and says how they connect. Zero
// values take the defaults.
type RoutedConfig struct {
	// Limits bound the clients. MaxConnsPerClient bounds the connections
	// each client holds open at once, its writer's, admin calls' and
	// consumers' readers' together (default 16). A dial beyond it waits,
	// at most the 5 s dial timeout, for one to close
	// (connection_budget_exhausted); a limited client closes idle
	// connections after a second.
	routing.Limits
	// Dial, when set, opens every routed client's connections: writer,
	// admin and readers (a SOCKS dialer, a dialer that records
	// connections). A client's close still waits until each is closed.
	Dial DialFunc
	// SASL, when set, builds each tenant's SASL mechanism; without it a
	// User authenticates with SASL PLAIN.
	SASL SASLFunc
}

type routedConfig struct {
	resolve routing.Resolver
	RoutedConfig
}

// DefaultMaxConnsPerClient is RoutedConfig.MaxConnsPerClient's default.
const DefaultMaxConnsPerClient = 16

// limits are the routed limits with the defaults filled in.
func (rc *routedConfig) limits() routing.Limits {
	return rc.WithDefaults(DefaultMaxConnsPerClient)
}

// SASLFunc builds a tenant's SASL mechanism from its credentials (SCRAM,
// OAUTHBEARER); without one, a User authenticates with SASL PLAIN.
type SASLFunc func(routing.Credentials) (sasl.Mechanism, error)

// Brokers sets the bootstrap brokers of the module's shared client. The
// client dials lazily, on the first write, read or provisioning call.
func Brokers(addrs ...string) Option { return modules.Own(func(c *config) { c.brokers = addrs }) }

// SASL authenticates the shared client with m.
func SASL(m sasl.Mechanism) Option { return modules.Own(func(c *config) { c.mechanism = m }) }

// TLS runs the shared client over TLS.
func TLS(t *tls.Config) Option { return modules.Own(func(c *config) { c.tls = t }) }

// Routed gives every tenant its own client, built from the credentials
// resolve returns (dedicated). Credentials.Endpoint holds the tenant's
// brokers, comma-separated; User and Secret, when set, authenticate with
// SASL PLAIN (RoutedConfig.SASL picks another mechanism); Params["tls"] =
// "true" dials TLS ("false" or none: plaintext; any other value is refused).
// A tenant resolving to a cluster another tenant uses is
// refused (dedicated_target_shared). Routed replaces Brokers.
func Routed(resolve routing.Resolver, cfg RoutedConfig) Option {
	return modules.Own(func(c *config) { c.routed = &routedConfig{resolve: resolve, RoutedConfig: cfg} })
}

// DialFunc opens a network connection to a broker (a SOCKS dialer, a
// dialer that records connections).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// TuneWriter adjusts every kafka-go Writer the module builds (batching,
// acks, retries, compression). Topic and Transport are the module's own.
func TuneWriter(fn func(*kafkago.Writer)) Option { return modules.Own(func(c *config) { c.tune = fn }) }

// Module builds a Kafka module: its wiring, checked during fx.New, its
// routes, each provided under its route name, its consumers, run from
// OnStart to OnStop, and its lifecycle as *migrate.Runner name:"<module>".
// Nothing connects before the first call or OnStart.
func Module(name string, opts ...Option) fx.Option {
	cfg := &config{}
	errs := modules.Configure(rules, name, cfg, takes, opts)
	sources := 0
	if len(cfg.brokers) > 0 {
		sources++
	}
	if cfg.routed != nil {
		sources++
	}
	spec := modules.Spec{Name: name, Rules: rules, Floor: cfg.Floor, ConnBudget: cfg.ConnBudget, Problems: errs,
		Sources: sources, SourceFix: "pass exactly one of kafka.Brokers(addrs...) and kafka.Routed(resolve, cfg)",
		Provided: []modules.Provided{{Type: reflect.TypeFor[*migrate.Runner](), Name: name}}}
	if cfg.routed != nil {
		spec.WorstCaseConns = cfg.routed.limits().MaxClients * cfg.routed.limits().MaxConnsPerClient
		spec.Problems = append(spec.Problems, modules.CheckRouted(rules, name, "kafka.Routed", cfg.routed.resolve, cfg.routed.Limits)...)
	}
	for _, r := range cfg.routes {
		rs := modules.RouteSpec{Route: r.floorsRoute(cfg.routed != nil), Problems: r.validate()}
		if r.kind == kindProducer {
			spec := r
			rs.Provide = fx.Provide(fx.Annotate(func(c *core) *Producer { return &Producer{route: newRoute(c, spec)} },
				fx.ResultTags(nameTag(r.name))))
			rs.Provided = []modules.Provided{{Type: reflect.TypeFor[*Producer](), Name: r.name}}
		}
		spec.Routes = append(spec.Routes, rs)
	}
	spec.Problems = append(spec.Problems, cfg.topicProblems(name)...)
	vers := versionWiring(&spec, cfg)
	for _, c := range cfg.consumers {
		route := cfg.route(c.route)
		ws := modules.WorkerSpec{Worker: c.decl(name), Problems: c.validate(route, cfg.routed != nil), Run: c.invoke(name, route)}
		// A sharded consumer's groups are "<Group>.<tenant hex>".
		if e := rules.StaticInTenantSpace(name, c.route, "consumer group", c.cfg.Group, groupSpace, "kafka.ConsumerConfig.Group"); e != nil {
			spec.Problems = append(spec.Problems, e)
		}
		spec.Workers = append(spec.Workers, ws)
	}
	spec.Parts = append(spec.Parts,
		fx.Provide(fx.Private, newCore(name, cfg, vers)),
		modules.ProvideLifecycle(name, rules.Name, true, func(c *core) *migrate.Runner {
			return (&lifecycleTarget{core: c, routes: cfg.routes, teardown: cfg.Teardown}).runner(cfg.Registry)
		}),
		modules.ProvideServerCheck(name, rules.Name, func(c *core) bool { return c.shared == nil },
			func(ctx context.Context, c *core) error { _, err := c.shared.clusterID(ctx); return err }),
	)
	return modules.Assemble(spec)
}

// topicProblems refuses static topics shaped like a tenant's and topics
// whose metric names collide.
func (cfg *config) topicProblems(name string) []error {
	var errs []error
	topics := map[string]string{} // metric name → topic or prefix
	for _, r := range cfg.routes {
		if r.perTenant == nil && r.topic != "" {
			if e := rules.StaticInTenantSpace(name, r.name, "topic", r.topic, topicSpace, r.cfgType+".Topic"); e != nil {
				errs = append(errs, e)
			}
		}
		t := r.topic
		if r.perTenant != nil {
			t = r.prefix + "*"
		}
		if t == "*" || t == "" {
			continue
		}
		if prev, ok := topics[metricName(t)]; ok && prev != t {
			errs = append(errs, rules.WiringInvalid(name, r.name,
				fmt.Sprintf("topic %q collides with %q: Kafka treats '.' and '_' as the same in metric names", t, prev),
				"use either '.' or '_' in the module's topic names, not both"))
		}
		topics[metricName(t)] = t
	}
	return errs
}

func (cfg *config) route(name string) *routeSpec {
	for _, r := range cfg.routes {
		if r.name == name {
			return r
		}
	}
	return nil
}

func nameTag(s string) string { return `name:"` + s + `"` }
