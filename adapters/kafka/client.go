package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// client is one set of brokers and credentials: a shared writer, and what
// readers and the admin API dial with. Building it connects to nothing.
type client struct {
	brokers   []string
	transport *kafkago.Transport
	dialer    *kafkago.Dialer
	writer    *kafkago.Writer
	conns     *conns // the transport's connections
	// target is a routed client's routedTarget ("" on the shared client):
	// what a tenant found current is remembered with.
	target string
	// wrap, when set, wraps every transport of the client's requests (the
	// writer's, the admin calls', the probes'): a test's seam to cut a
	// request.
	wrap func(kafkago.RoundTripper) kafkago.RoundTripper
}

// idleCloser is a transport whose idle connections can be closed.
type idleCloser interface{ CloseIdleConnections() }

// wrappedTransport is a transport under c.wrap, still closable.
type wrappedTransport struct {
	kafkago.RoundTripper
	tr *kafkago.Transport
}

func (w wrappedTransport) CloseIdleConnections() { w.tr.CloseIdleConnections() }

// wrapped is tr under c.wrap.
func (c *client) wrapped(tr *kafkago.Transport) kafkago.RoundTripper {
	if c.wrap == nil {
		return tr
	}
	return wrappedTransport{c.wrap(tr), tr}
}

// wrapWith wraps the client's transports with wrap (nil: none).
func (c *client) wrapWith(wrap func(kafkago.RoundTripper) kafkago.RoundTripper) *client {
	c.wrap = wrap
	c.writer.Transport = c.wrapped(c.transport)
	return c
}

// newClient builds a client that holds at most maxConns connections open
// (0: no limit). A limited client closes its transport's idle connections
// after a second, not kafka-go's 30, so that a burst's extra connections
// free their slots for the next dial soon.
func newClient(brokers []string, mech sasl.Mechanism, tc *tls.Config, tune func(*kafkago.Writer), dial DialFunc, maxConns int, module string) *client {
	cs := newConns(dial, maxConns, module)
	tr := &kafkago.Transport{Dial: cs.dialTracked, SASL: mech, TLS: tc, DialTimeout: 5 * time.Second, MetadataTTL: 10 * time.Second}
	if maxConns > 0 {
		tr.IdleTimeout = time.Second
	}
	w := &kafkago.Writer{
		Addr:         kafkago.TCP(brokers...),
		Balancer:     &kafkago.Hash{},
		RequiredAcks: kafkago.RequireAll,
		// Producing is request-scoped: a single record must not wait a
		// second for a batch to fill.
		BatchTimeout:    5 * time.Millisecond,
		MaxAttempts:     3,
		WriteBackoffMin: 50 * time.Millisecond,
		WriteBackoffMax: 500 * time.Millisecond,
	}
	if tune != nil {
		tune(w)
	}
	w.Topic, w.Transport = "", tr // topics are chosen per message, per tenant
	return &client{
		brokers:   brokers,
		transport: tr,
		dialer:    &kafkago.Dialer{Timeout: 5 * time.Second, DialFunc: cs.dialTracked, SASLMechanism: mech, TLS: tc},
		writer:    w,
		conns:     cs,
	}
}

func (c *client) admin() *kafkago.Client {
	return &kafkago.Client{Addr: kafkago.TCP(c.brokers...), Transport: c.wrapped(c.transport), Timeout: 10 * time.Second}
}

// recover drops the transport's cached connection pools after a failure
// that is not a broker's answer (a refused dial, a reset connection): the
// transport otherwise keeps returning the cached failure until its
// metadata TTL, long after the broker is back. BrokerNotAvailable counts
// as such a failure: the transport answers it itself when its cached
// metadata, from a failed fetch, knows no broker.
func (c *client) recover(err error) {
	var ke kafkago.Error
	var we kafkago.WriteErrors
	if (errors.As(err, &ke) && ke != kafkago.BrokerNotAvailable) || errors.As(err, &we) {
		return
	}
	c.transport.CloseIdleConnections()
}

// close returns once every connection of the writer and the admin client
// is closed, so a routed client's slot is freed only then. Readers are
// closed by their consumers before release.
func (c *client) close() {
	_ = c.writer.Close()
	c.transport.CloseIdleConnections()
	c.conns.closeAll()
}

// core is a module's connection state, private to the module.
type core struct {
	module string
	shared *client
	pools  *routing.Pools[*client]
	routes []*routeSpec
	// versions: Migrations; gate: RequiredVersion, this app's own.
	versions *versions
	gate     *migrate.Gate
	// tenants refuses a suspended tenant's calls (nil: no lifecycle).
	suspensions *modules.Suspensions
	// tel records producer calls and consumed records (nil: the app gave
	// no telemetry).
	tel *telemetry.Telemetry
}

func newCore(module string, cfg *config, v *versions) func(fx.Lifecycle, modules.LifecycleIn) (*core, error) {
	return func(lc fx.Lifecycle, lin modules.LifecycleIn) (*core, error) {
		c := &core{module: module, routes: cfg.routes, versions: v, gate: migrate.NewGate(module, rules.Name, cfg.Required),
			suspensions: lin.Suspensions, tel: lin.Telemetry}
		lin.Telemetry.ObserveBehind(module, rules.Name, c.gate.Behind)
		if cfg.routed == nil {
			c.shared = newClient(cfg.brokers, cfg.mechanism, cfg.tls, cfg.tune, nil, 0, module).wrapWith(cfg.wrap)
			lc.Append(fx.StopHook(c.shared.close))
			return c, nil
		}
		pools, err := routing.New(routing.Config[*client]{
			Resolve: cfg.routed.resolve,
			Open: func(_ context.Context, cr routing.Credentials) (*client, error) {
				cl, err := openRouted(cr, cfg.routed, cfg.tune, module)
				if err != nil {
					return nil, err
				}
				return cl.wrapWith(cfg.wrap), nil
			},
			Close:      (*client).close,
			Targets:    routedTargets,
			Identify:   func(ctx context.Context, c *client) (string, error) { return c.clusterID(ctx) },
			TargetNoun: "cluster",
			Module:     module,
			Backend:    rules.Name,
			Limits:     cfg.routed.Limits,
		})
		if err != nil {
			return nil, err
		}
		c.pools = pools
		lc.Append(fx.StopHook(pools.Close))
		return c, nil
	}
}

// routedBrokers splits a routed Endpoint into its brokers.
func routedBrokers(cr routing.Credentials) ([]string, error) {
	var brokers []string
	for _, b := range strings.Split(cr.Endpoint, ",") {
		if b = strings.TrimSpace(b); b != "" {
			brokers = append(brokers, b)
		}
	}
	if len(brokers) == 0 {
		return nil, fmt.Errorf("kafka: routed credentials name no brokers")
	}
	return brokers, nil
}

// routedTargets is where a tenant's records live: the cluster, named by
// each of its bootstrap brokers (canonical host, default port 9092). Every
// route of a routed module uses static topic names and group prefixes, so
// two tenants on one cluster would share every topic; per-tenant topics on
// a shared cluster are the namespace tier, on a plain client. Credentials
// do not count. These names are a cheap first line: the cluster id the
// brokers report (clusterID) decides.
func routedTargets(cr routing.Credentials) ([]string, error) {
	brokers, err := routedBrokers(cr)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(brokers))
	for i, b := range brokers {
		host, port, err := net.SplitHostPort(b)
		if err != nil {
			host, port = b, "9092"
		}
		out[i] = routing.CanonicalHostPort(host, port)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// clusterID asks every bootstrap broker which cluster it is (the id fixed
// when the cluster was formatted), each on a connection of its own: the
// transport dials a random bootstrap broker each time, so a list whose
// brokers belong to two clusters would reach either one, whichever the id
// was read from. Such a list serves nobody; so does one with a broker that
// does not answer, which could be another cluster's once it is back.
func (c *client) clusterID(ctx context.Context) (string, error) {
	var id, from string
	for _, b := range slices.Compact(slices.Sorted(slices.Values(c.brokers))) {
		tr := &kafkago.Transport{Dial: c.conns.dialTracked, SASL: c.transport.SASL, TLS: c.transport.TLS, DialTimeout: c.transport.DialTimeout}
		res, err := (&kafkago.Client{Addr: kafkago.TCP(b), Transport: tr, Timeout: 10 * time.Second}).
			Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{}})
		tr.CloseIdleConnections()
		if err != nil {
			return "", fmt.Errorf("kafka: reading the cluster id from bootstrap broker %s: %w", b, err)
		}
		if id != "" && res.ClusterID != id {
			return "", &tenancy.Error{
				Code: tenancy.CodeDedicatedTargetShared, Module: c.conns.module, Backend: rules.Name,
				Detail: fmt.Sprintf("the routed client's bootstrap brokers belong to two clusters: %s reports %q and %s reports %q; "+
					"its connections would reach either, so nothing was read or written", from, id, b, res.ClusterID),
				Fix: "give each tenant's credentials bootstrap brokers of that tenant's one cluster",
			}
		}
		id, from = res.ClusterID, b
	}
	return id, nil
}

// openRouted builds a tenant's client from its credentials.
func openRouted(cr routing.Credentials, rc *routedConfig, tune func(*kafkago.Writer), module string) (*client, error) {
	brokers, err := routedBrokers(cr)
	if err != nil {
		return nil, err
	}
	var mech sasl.Mechanism
	switch {
	case rc.SASL != nil:
		m, err := rc.SASL(cr)
		if err != nil {
			return nil, fmt.Errorf("kafka: routed SASL: %w", err)
		}
		mech = m
	case cr.User != "":
		mech = plain.Mechanism{Username: cr.User, Password: cr.Secret}
	}
	var tc *tls.Config
	switch v := cr.Params["tls"]; v {
	case "true":
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
	case "", "false":
	default: // a tenant that asked for TLS in another spelling must not get plaintext
		return nil, fmt.Errorf("kafka: routed credentials: Params[\"tls\"] is %q; want \"true\" or \"false\"", v)
	}
	targets, err := routedTargets(cr)
	if err != nil {
		return nil, err
	}
	c := newClient(brokers, mech, tc, tune, rc.Dial, rc.limits().MaxConnsPerClient, module)
	c.target = strings.Join(targets, ",")
	return c, nil
}

// clientFor returns the client to use for tenant (zero: the shared client
// of a non-routed module) and its release.
func (c *core) clientFor(ctx context.Context, tenant tenancy.ID) (*client, func(), error) {
	if c.pools == nil {
		return c.shared, func() {}, nil
	}
	return c.pools.AcquireFor(ctx, tenant)
}
