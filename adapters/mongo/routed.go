package mongo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/routing"
)

// routedClient is one tenant's client and the database it uses.
type routedClient struct {
	client *driver.Client
	db     string
	// target is routedTargets of the credentials it was opened with.
	target string
}

// newPools builds the routed clients of a Routed module; db is the
// database a tenant uses unless its credentials name another.
func newPools(module, db string, rc *routedConfig) (*routing.Pools[*routedClient], error) {
	return routing.New(routing.Config[*routedClient]{
		Resolve:    rc.resolve,
		Targets:    func(cr routing.Credentials) ([]string, error) { return routedTargets(cr, db) },
		Identify:   func(ctx context.Context, rc *routedClient) (string, error) { return rc.identify(ctx) },
		TargetNoun: "database",
		Module:     module,
		Backend:    rules.Name,
		Limits:     rc.limits(),
		Open: func(_ context.Context, cr routing.Credentials) (*routedClient, error) {
			name, err := routedDatabase(cr, db)
			if err != nil {
				return nil, err
			}
			targets, err := routedTargets(cr, db)
			if err != nil {
				return nil, err
			}
			o := options.Client().ApplyURI(cr.Endpoint).SetMaxPoolSize(uint64(rc.limits().MaxConnsPerClient))
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
			return &routedClient{client: cl, db: name, target: strings.Join(targets, ",")}, nil
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

// routedTargets names where a tenant's data may live: each host of the
// URI (as the driver reads it: unescaped, default port 27017) with the
// database its client uses, lower-cased (MongoDB keeps no two database
// names that differ only in case). Credentials, the URI's path (the auth
// database) and options do not count. A mongodb+srv URI counts by its SRV
// name, unresolved. These names are a cheap first line: the identity the
// database itself holds (identify) decides.
func routedTargets(cr routing.Credentials, db string) ([]string, error) {
	name, err := routedDatabase(cr, db)
	if err != nil {
		return nil, err
	}
	name = strings.ToLower(name)
	scheme, rest, ok := strings.Cut(cr.Endpoint, "://")
	if !ok || (scheme != "mongodb" && scheme != "mongodb+srv") {
		return nil, fmt.Errorf("mongo: routed endpoint is not a mongodb:// or mongodb+srv:// URI")
	}
	if scheme == "mongodb+srv" { // resolving it here would be a DNS lookup per resolution
		rest, _, _ = strings.Cut(rest, "?")
		rest, _, _ = strings.Cut(rest, "/")
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			rest = rest[i+1:]
		}
		if rest == "" {
			return nil, fmt.Errorf("mongo: routed endpoint names no host")
		}
		return []string{"srv:" + routing.CanonicalHost(rest) + "/" + name}, nil
	}
	o := options.Client().ApplyURI(cr.Endpoint)
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("mongo: routed endpoint: %w", err)
	}
	if len(o.Hosts) == 0 {
		return nil, fmt.Errorf("mongo: routed endpoint names no host")
	}
	out := make([]string, 0, len(o.Hosts))
	for _, h := range o.Hosts {
		if strings.HasSuffix(h, ".sock") {
			out = append(out, h+"/"+name)
			continue
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = h, "27017"
		}
		out = append(out, routing.CanonicalHostPort(host, port)+"/"+name)
	}
	return out, nil
}

// identityColl holds, in each routed tenant's database, one document whose
// token names that database: MongoDB reports no id of its own for a
// database, so the first client to ask writes one, and every spelling of
// the database reads the same token back. No route can name a tenantwire_
// collection.
const identityColl = "tenantwire_identity"

// identify returns the database's token, writing it when there is none.
func (rc *routedClient) identify(ctx context.Context) (string, error) {
	coll := rc.client.Database(rc.db).Collection(identityColl)
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return "", err
	}
	opts := options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)
	var doc struct {
		Token string `bson:"token"`
	}
	filter := bson.D{{Key: "_id", Value: "database"}}
	update := bson.D{{Key: "$setOnInsert", Value: bson.D{{Key: "token", Value: hex.EncodeToString(token)}}}}
	err := coll.FindOneAndUpdate(ctx, filter, update, opts).Decode(&doc)
	if driver.IsDuplicateKeyError(err) { // another client inserted it first
		err = coll.FindOne(ctx, filter).Decode(&doc)
	}
	if err == nil && doc.Token == "" {
		err = errors.New("the identity document has no token")
	}
	if err != nil {
		return "", fmt.Errorf("mongo: reading the database's identity (%s.%s): %w", rc.db, identityColl, err)
	}
	return doc.Token, nil
}
