package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Fleet is a fleet route: the deployment's replicas, each live while its
// heartbeats keep coming. It is tenant-global: never put tenant data here.
//
// One sorted set per route holds replica -> expiry. Expiry is computed from
// the server's clock (TIME inside the script), so replicas with skewed
// clocks agree on who is live.
type Fleet struct {
	route
	self string
}

var (
	beatScript = goredis.NewScript(`
local t = redis.call("TIME")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local ttl = tonumber(ARGV[2])
redis.call("ZADD", KEYS[1], now + ttl, ARGV[1])
if redis.call("PTTL", KEYS[1]) < ttl then redis.call("PEXPIRE", KEYS[1], ttl) end
return 1`)
	liveScript = goredis.NewScript(`
local t = redis.call("TIME")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
return redis.call("ZRANGE", KEYS[1], 0, -1)`)
)

func newFleet(r route, spec *routeSpec) *Fleet {
	self := spec.replica
	if self == "" {
		host, _ := os.Hostname()
		var b [3]byte
		_, _ = rand.Read(b[:])
		self = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	return &Fleet{route: r, self: self}
}

// Self is this replica's name in the fleet.
func (f *Fleet) Self() string { return f.self }

// Heartbeat marks replica live for ttl from now.
func (f *Fleet) Heartbeat(ctx context.Context, replica string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("redis: fleet heartbeat TTL %s is under a millisecond", ttl)
	}
	ctx, cl, k, done, err := f.target(ctx, "")
	if err != nil {
		return err
	}
	defer done()
	return beatScript.Run(ctx, cl, []string{k}, replica, ttl.Milliseconds()).Err()
}

// Live returns the replicas whose last heartbeat has not expired, in name
// order, dropping the expired ones.
func (f *Fleet) Live(ctx context.Context) ([]string, error) {
	ctx, cl, k, done, err := f.target(ctx, "")
	if err != nil {
		return nil, err
	}
	defer done()
	live, err := liveScript.Run(ctx, cl, []string{k}).StringSlice()
	slices.Sort(live)
	return live, err
}

// Leave removes replica from the fleet at once.
func (f *Fleet) Leave(ctx context.Context, replica string) error {
	ctx, cl, k, done, err := f.target(ctx, "")
	if err != nil {
		return err
	}
	defer done()
	return cl.ZRem(ctx, k, replica).Err()
}

// fleetHeartbeat beats for this replica from OnStart until OnStop, then
// leaves. A failed beat is logged and retried on the next tick, so a Redis
// outage does not stop the app; the replica just drops out of Live.
func fleetHeartbeat(module string, spec *routeSpec) fx.Option {
	return fx.Invoke(fx.Annotate(func(lc fx.Lifecycle, f *Fleet, app *slog.Logger) {
		log := modules.WorkerLogger(app, rules.Name, module, spec.name, spec.name+"-heartbeat")
		var cancel context.CancelFunc
		done := make(chan struct{})
		lc.Append(fx.Hook{
			OnStart: func(context.Context) error {
				ctx, c := context.WithCancel(tenancy.WithGlobal(context.Background()))
				cancel = c
				go func() {
					defer close(done)
					for {
						if err := f.Heartbeat(ctx, f.self, spec.beatTTL); err != nil && ctx.Err() == nil {
							modules.LogWorkerError(ctx, log, "tenantwire: fleet heartbeat failed", err)
						}
						if !shards.Sleep(ctx, nil, spec.beatEvery) {
							return
						}
					}
				}()
				return nil
			},
			OnStop: func(stopCtx context.Context) error {
				if cancel == nil {
					return nil
				}
				cancel()
				select {
				case <-done:
				case <-stopCtx.Done():
					return stopCtx.Err()
				}
				return f.Leave(tenancy.WithGlobal(stopCtx), f.self)
			},
		})
	}, fx.ParamTags(``, nameTag(spec.name), `optional:"true"`)))
}
