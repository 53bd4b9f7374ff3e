package mongo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/routing"
)

// routedClient is one tenant's client and the database it uses.
type routedClient struct {
	client *driver.Client
	db     string
	// target is routedTarget of the credentials it was opened with.
	target string
}

// newPools builds the routed clients of a Routed module; db is the
// database a tenant uses unless its credentials name another.
func newPools(module, db string, rc *routedConfig) (*routing.Pools[*routedClient], error) {
	return routing.New(routing.Config[*routedClient]{
		Resolve:    rc.resolve,
		Target:     func(cr routing.Credentials) (string, error) { return routedTarget(cr, db) },
		TargetNoun: "database",
		Module:     module,
		Backend:    Rules.Name,
		MaxClients: rc.maxClients(),
		TTL:        rc.TTL,
		MaxWait:    rc.MaxWait,
		Open: func(_ context.Context, cr routing.Credentials) (*routedClient, error) {
			name, err := routedDatabase(cr, db)
			if err != nil {
				return nil, err
			}
			target, err := routedTarget(cr, db)
			if err != nil {
				return nil, err
			}
			o := options.Client().ApplyURI(cr.Endpoint).SetMaxPoolSize(uint64(rc.maxConnsPerClient()))
			if cr.User != "" {
				o.SetAuth(options.Credential{Username: cr.User, Password: cr.Secret})
			}
			if rc.ClientOptions != nil {
				rc.ClientOptions(o)
			}
			cl, err := driver.Connect(o) // lazy: no dial here
			if err != nil {
				return nil, err
			}
			return &routedClient{client: cl, db: name, target: target}, nil
		},
		Close: func(rc *routedClient) { _ = rc.client.Disconnect(context.Background()) },
	})
}

// routedDatabase is the database a tenant's client uses: Params["database"]
// or the module's.
func routedDatabase(cr routing.Credentials, db string) (string, error) {
	d := cr.Params["database"]
	if d == "" {
		return db, nil
	}
	if err := ValidDatabaseName(d); err != nil {
		return "", err
	}
	return d, nil
}

// routedTarget is where a tenant's data lives: the URI's hosts and the
// database its client uses. Credentials, the URI's path (the auth
// database) and options do not count. A mongodb+srv URI counts by its
// SRV name, unresolved: a resolver must not name one deployment by two
// different host lists.
func routedTarget(cr routing.Credentials, db string) (string, error) {
	name, err := routedDatabase(cr, db)
	if err != nil {
		return "", err
	}
	scheme, rest, ok := strings.Cut(cr.Endpoint, "://")
	if !ok || (scheme != "mongodb" && scheme != "mongodb+srv") {
		return "", fmt.Errorf("mongo: routed endpoint is not a mongodb:// or mongodb+srv:// URI")
	}
	rest, _, _ = strings.Cut(rest, "?")
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = rest[i+1:]
	}
	rest, _, _ = strings.Cut(rest, "/")
	var hosts []string
	for _, h := range strings.Split(rest, ",") {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		if scheme == "mongodb" && !strings.HasSuffix(h, ".sock") && !hasPort(h) {
			h += ":27017"
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return "", fmt.Errorf("mongo: routed endpoint names no host")
	}
	slices.Sort(hosts)
	return scheme + "://" + strings.Join(slices.Compact(hosts), ",") + "/" + name, nil
}

// hasPort reports whether host ends in :port (an IPv6 literal is bracketed).
func hasPort(h string) bool {
	i := strings.LastIndex(h, ":")
	return i >= 0 && i > strings.LastIndex(h, "]")
}
