package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/testsvc"
)

// TestIdempotencyTTL: Do stores its result for the route's TTL, 24h when
// unset (as PostgreSQL's), and a second Do replays it without running fn.
func TestIdempotencyTTL(t *testing.T) {
	rdb := goredis.NewClient(&goredis.Options{Addr: testsvc.RedisAddr(t)})
	defer rdb.Close()
	ctx := context.Background()
	for name, c := range map[string]struct {
		ttl, want time.Duration
	}{"set": {time.Minute, time.Minute}, "default": {0, 24 * time.Hour}} {
		t.Run(name, func(t *testing.T) {
			var b [6]byte
			_, _ = rand.Read(b[:])
			route := "idem" + hex.EncodeToString(b[:])
			key := "tw:s:i:" + route + ":k"
			defer rdb.Del(ctx, key)
			var i *redis.Idempotency
			app := fx.New(fx.NopLogger, redis.Module("m", redis.Use(rdb), redis.IdempotencyRoute(route, redis.RouteConfig{TTL: c.ttl})),
				fx.Invoke(fx.Annotate(func(v *redis.Idempotency) { i = v }, fx.ParamTags(`name:"`+route+`"`))))
			if err := app.Err(); err != nil {
				t.Fatal(err)
			}
			if res, replayed, err := i.Do(ctx, "k", returns("a")); err != nil || replayed || string(res) != "a" {
				t.Fatalf("first Do = %q, %v, %v", res, replayed, err)
			}
			ttl := rdb.PTTL(ctx, key).Val()
			if ttl <= c.want-time.Minute/2 || ttl > c.want {
				t.Errorf("stored for %s, want about %s", ttl, c.want)
			}
			ran := false
			res, replayed, err := i.Do(ctx, "k", func(context.Context) ([]byte, error) { ran = true; return []byte("b"), nil })
			if err != nil || !replayed || string(res) != "a" || ran {
				t.Errorf("second Do = %q, %v, %v (fn ran: %v); want a's result replayed", res, replayed, err, ran)
			}
		})
	}
}
