package adapters_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

type order struct{ Total int }

// TestSharedOptionsOneVocabulary: the same kit option, written once,
// holds each backend's module to its floor: a tagged route under
// modules.RequiredIsolation(namespace) is refused during fx.New on
// memory, PostgreSQL, MongoDB and Redis alike, reached tagged, required
// namespace. No server is reached.
func TestSharedOptionsOneVocabulary(t *testing.T) {
	floor := modules.RequiredIsolation(tenancy.Namespace)
	for name, mod := range map[string]fx.Option{
		"memory": memory.Module("m", floor,
			memory.Document[order]("orders", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")})),
		"postgres": postgres.Module("m", floor, postgres.Connect("postgres://127.0.0.1:1/x"),
			postgres.Document[order]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")})),
		"mongo": mongo.Module("m", floor, mongo.Connect("mongodb://127.0.0.1:1"), mongo.Database("shop"),
			mongo.Document[order]("orders", mongo.DocumentConfig{TenantAware: true, Collection: naming.Shared("orders")})),
		"redis": redis.Module("m", floor, redis.Connect(&goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}}),
			redis.CacheRoute("orders", redis.RouteConfig{TenantAware: true})),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := modules.DryRun(mod)
			var e *tenancy.Error
			if !errors.As(err, &e) || !e.Tiers || e.Reached != tenancy.Tagged || e.Required != tenancy.Namespace || e.Module != "m" || e.Route != "orders" {
				t.Fatalf("got %v, want the route orders refused at tagged under namespace", err)
			}
		})
	}
}

// TestOptionOfAnotherBackendRefused: options share one type, so the
// compiler takes a MongoDB option in postgres.Module, or a shared option
// a backend cannot honour; fx.New refuses each with wiring_invalid naming
// the module, instead of ignoring it.
func TestOptionOfAnotherBackendRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		mod            fx.Option
		backend, wants string
	}{
		"mongo in postgres": {postgres.Module("m", postgres.Connect("postgres://127.0.0.1:1/x"), mongo.Database("shop")),
			"postgres", "a mongo option is not an option of the postgres backend"},
		"redis in kafka": {kafka.Module("m", kafka.Brokers("127.0.0.1:1"), redis.Use(nil)),
			"kafka", "a redis option is not an option of the kafka backend"},
		"budget in memory": {memory.Module("m", modules.ConnBudget(4)),
			"memory", "a memory module does not take modules.ConnBudget"},
		"placements in neo4j": {neo4j.Module("m", neo4j.Connect("bolt://127.0.0.1:1", nil), neo4j.Database("g"),
			modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged})),
			"neo4j", "a neo4j module does not take modules.Placements"},
		"negative budget": {redis.Module("m", redis.Connect(&goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}}), modules.ConnBudget(-3)),
			"redis", "ConnBudget -3 is negative"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := modules.DryRun(tc.mod)
			var e *tenancy.Error
			if !errors.As(err, &e) || e.Code != tenancy.CodeWiringInvalid || e.Backend != tc.backend || e.Module != "m" || !strings.Contains(e.Detail, tc.wants) || e.Fix == "" {
				t.Fatalf("got %v, want %s's wiring_invalid saying %q", err, tc.backend, tc.wants)
			}
		})
	}
}

// TestRoutedRefusedAlikeOnEveryBackend: Routed with no resolver, or with
// a negative limit, is refused during fx.New with one wording on every
// backend that routes, where before some took a negative limit for its
// default.
func TestRoutedRefusedAlikeOnEveryBackend(t *testing.T) {
	bad := routing.Limits{MaxClients: -1, MaxConnsPerClient: -2, TTL: -time.Second}
	for name, mod := range map[string]fx.Option{
		"postgres": postgres.Module("m", postgres.Routed(nil, postgres.RoutedConfig{Limits: bad})),
		"mongo":    mongo.Module("m", mongo.Database("shop"), mongo.Routed(nil, mongo.RoutedConfig{Limits: bad})),
		"redis":    redis.Module("m", redis.Routed(nil, redis.RoutedConfig{Limits: bad})),
		"kafka":    kafka.Module("m", kafka.Routed(nil, kafka.RoutedConfig{Limits: bad})),
		"neo4j":    neo4j.Module("m", neo4j.Routed(nil, bad)),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := modules.DryRun(mod)
			var details []string
			for _, e := range tenancyErrors(err) {
				if e.Code == tenancy.CodeWiringInvalid && strings.HasPrefix(e.Backend, name) && e.Module == "m" { // mongo's is "mongodb"
					details = append(details, e.Detail)
				}
			}
			for _, want := range []string{name + ".Routed needs a credential resolver", "routing.Limits.MaxClients -1 is negative",
				"routing.Limits.MaxConnsPerClient -2 is negative", "routing.Limits.TTL -1s is negative"} {
				if !slices.Contains(details, want) {
					t.Errorf("no refusal %q among %q", want, details)
				}
			}
		})
	}
}

// tenancyErrors is every *tenancy.Error in err's tree.
func tenancyErrors(err error) []*tenancy.Error {
	if e, ok := err.(*tenancy.Error); ok {
		return []*tenancy.Error{e}
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		var out []*tenancy.Error
		for _, inner := range u.Unwrap() {
			out = append(out, tenancyErrors(inner)...)
		}
		return out
	case interface{ Unwrap() error }:
		return tenancyErrors(u.Unwrap())
	}
	return nil
}
