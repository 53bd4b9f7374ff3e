package redis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// cutHook fails the command (a pipeline counts as one) at the cut's
// step, as a process killed there would never send it or the rest.
type cutHook struct{ cut tenancytest.Cutter }

var errCutHere = errors.New("cut here")

func (h *cutHook) fail(ctx context.Context) error {
	if h.cut.Step(ctx) {
		return errCutHere
	}
	return nil
}

func (h *cutHook) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *cutHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if err := h.fail(ctx); err != nil {
			return err
		}
		return next(ctx, cmd)
	}
}

func (h *cutHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if err := h.fail(ctx); err != nil {
			return err
		}
		return next(ctx, cmds)
	}
}

// TestOffboardCutRedis, on one server and on the cluster: an offboard of
// C (tagged keys, a namespace, a counter with its AddOnce marker) cut at
// each command it sends in turn (its verifier's too), then rerun,
// leaves nothing of C on any master and B's keys as they were.
func TestOffboardCutRedis(t *testing.T) {
	onEachTopology(t, func(t *testing.T, opts *goredis.UniversalOptions) {
		run := strings.ToLower(tenancytest.FreshTenant(t).Hex()[:8])
		client := goredis.NewUniversalClient(opts)
		t.Cleanup(func() { _ = client.Close() })
		h := &cutHook{}
		client.AddHook(h)
		if cc, ok := client.(*goredis.ClusterClient); ok {
			cc.OnNewNode(func(n *goredis.Client) { n.AddHook(h) })
		}
		r := archiveRedisApp(t, redis.Use(client), run)
		b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
		for _, id := range []tenancy.ID{b, c} {
			t.Cleanup(func() { _, _ = r.Tenants.Offboard(context.Background(), id) })
		}
		write := func(ctx context.Context) error {
			for i := range 30 {
				if err := r.Tagged.Set(ctx, fmt.Sprint("k", i), []byte("v"), time.Hour); err != nil {
					return err
				}
				if err := r.NS.Set(ctx, fmt.Sprint("{n}", i), []byte("w"), 0); err != nil {
					return err
				}
			}
			_, _, err := r.Count.AddOnce(ctx, "n", "op-1", 5, time.Hour)
			return err
		}
		if err := write(tenancy.WithTenant(context.Background(), b)); err != nil {
			t.Fatal(err)
		}
		cuts := tenancytest.CheckOffboardCut(t, tenancytest.OffboardCut{Tenants: r.Tenants, Target: c, Other: b, Write: write, Most: 1 << 14,
			Cut: h.cut.Cut})
		if cuts == 0 {
			t.Fatal("no offboard was cut")
		}
		t.Logf("the offboard was cut %d times, at each of its first commands and then at doubling counts", cuts)
	})
}
