package soak_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
)

// budget is a connection bound the soak holds a client to, and the most
// connections seen at once.
type budget struct {
	name  string
	limit int
	peak  int
	over  []string // samples above the limit
}

func (b *budget) observe(n int) {
	b.peak = max(b.peak, n)
	if n > b.limit && len(b.over) < 5 {
		b.over = append(b.over, fmt.Sprintf("%d at %s", n, time.Now().Format("15:04:05.000")))
	}
}

// sampler counts the server side of every connection budget
// periodically: pg_stat_activity per application name, Redis CLIENT LIST.
// A sample a server cannot answer (it is restarting) is skipped and
// counted.
type sampler struct {
	pg    *privatePG
	redis string

	mu      sync.Mutex
	budgets map[string]*budget
	samples int
	skipped int
}

const samplerName = "soak-sampler"

func newSampler(pg *privatePG, redisAddr string) *sampler {
	return &sampler{pg: pg, redis: redisAddr, budgets: map[string]*budget{
		"soak-app":   {name: "postgres app pool", limit: appPGConns},
		"soak-relay": {name: "postgres relay pool", limit: relayPGConns},
		"redis":      {name: "redis app pool", limit: redisConns},
	}}
}

func (s *sampler) run(ctx context.Context, every time.Duration) {
	rc := goredis.NewClient(&goredis.Options{Addr: s.redis, PoolSize: 1, ClientName: samplerName,
		DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer rc.Close()
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if conn == nil || conn.IsClosed() {
			c, err := pgx.Connect(ctx, s.pg.plainURL(samplerName))
			if err == nil {
				conn = c
			}
		}
		pg, pgErr := s.pgCounts(ctx, conn)
		list, rErr := rc.ClientList(ctx).Result()
		s.mu.Lock()
		s.samples++
		if pgErr != nil {
			s.skipped++
			if conn != nil {
				conn.Close(context.Background())
				conn = nil
			}
		} else {
			for app, n := range pg {
				if b := s.budgets[app]; b != nil {
					b.observe(n)
				}
			}
		}
		if rErr != nil {
			s.skipped++
		} else {
			n := 0
			for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
				if line != "" && !strings.Contains(line, "name="+samplerName) {
					n++
				}
			}
			s.budgets["redis"].observe(n)
		}
		s.mu.Unlock()
	}
}

func (s *sampler) pgCounts(ctx context.Context, conn *pgx.Conn) (map[string]int, error) {
	if conn == nil {
		return nil, fmt.Errorf("no connection")
	}
	rows, err := conn.Query(ctx, "SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = 'soak' GROUP BY 1")
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	var app string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&app, &n}, func() error { out[app] = n; return nil })
	return out, err
}

// report prints each budget's peak and returns the samples above a
// budget.
func (s *sampler) report() (lines, over []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range []string{"soak-app", "soak-relay", "redis"} {
		b := s.budgets[key]
		lines = append(lines, fmt.Sprintf("soak connections %s: peak=%d budget=%d", b.name, b.peak, b.limit))
		if len(b.over) > 0 {
			over = append(over, fmt.Sprintf("%s above its budget of %d: %v", b.name, b.limit, b.over))
		}
	}
	lines = append(lines, fmt.Sprintf("soak connections sampled %d times (%d server answers skipped while a server restarted)", s.samples, s.skipped))
	return lines, over
}
