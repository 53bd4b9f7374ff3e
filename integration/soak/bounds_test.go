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
// connections seen at once (in total, and on each server for a pool
// spread over two).
type budget struct {
	name      string
	limit     int
	peak      int
	perServer [2]int
	over      []string // samples above the limit
}

func (b *budget) observe(n int) {
	b.peak = max(b.peak, n)
	if n > b.limit && len(b.over) < 5 {
		b.over = append(b.over, fmt.Sprintf("%d at %s", n, time.Now().Format("15:04:05.000")))
	}
}

// sampler counts the server side of every connection budget
// periodically: pg_stat_activity per application name on each PostgreSQL
// server (a budget spread over both is their sum), Redis CLIENT LIST. A
// sample a server cannot answer (it is restarting) is skipped and
// counted; a server down holds none of the pool's connections.
type sampler struct {
	pgs   []*privatePG
	redis string

	mu      sync.Mutex
	budgets map[string]*budget
	samples int
	skipped int
}

const samplerName = "soak-sampler"

var budgetOrder = []string{"soak-app", "soak-relay", appDedName, relayDedName, "redis"}

func newSampler(pgs []*privatePG, redisAddr string) *sampler {
	return &sampler{pgs: pgs, redis: redisAddr, budgets: map[string]*budget{
		"soak-app":   {name: "postgres app pool", limit: appPGConns},
		"soak-relay": {name: "postgres relay pool", limit: relayPGConns},
		appDedName:   {name: fmt.Sprintf("postgres dedicated app pools (%d servers)", len(pgs)), limit: dedConns},
		relayDedName: {name: fmt.Sprintf("postgres dedicated relay pools (%d servers)", len(pgs)), limit: dedConns},
		"redis":      {name: "redis app pool", limit: redisConns},
	}}
}

func (s *sampler) run(ctx context.Context, every time.Duration) {
	rc := goredis.NewClient(&goredis.Options{Addr: s.redis, PoolSize: 1, ClientName: samplerName,
		DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer rc.Close()
	conns := make([]*pgx.Conn, len(s.pgs))
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close(context.Background())
			}
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
		total := map[string]int{}
		var perServer [2]map[string]int
		failed := 0
		for i, p := range s.pgs {
			if conns[i] == nil || conns[i].IsClosed() {
				if c, err := pgx.Connect(ctx, p.dbURL("postgres", samplerName)); err == nil {
					conns[i] = c
				}
			}
			counts, err := pgCounts(ctx, conns[i])
			if err != nil {
				failed++
				if conns[i] != nil {
					conns[i].Close(context.Background())
					conns[i] = nil
				}
				continue
			}
			perServer[i] = counts
			for app, n := range counts {
				total[app] += n
			}
		}
		list, rErr := rc.ClientList(ctx).Result()
		s.mu.Lock()
		s.samples++
		s.skipped += failed
		if failed < len(s.pgs) {
			for app, n := range total {
				if b := s.budgets[app]; b != nil {
					b.observe(n)
				}
			}
			for i, counts := range perServer {
				for app, n := range counts {
					if b := s.budgets[app]; b != nil {
						b.perServer[i] = max(b.perServer[i], n)
					}
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

func pgCounts(ctx context.Context, conn *pgx.Conn) (map[string]int, error) {
	if conn == nil {
		return nil, fmt.Errorf("no connection")
	}
	rows, err := conn.Query(ctx, "SELECT application_name, count(*) FROM pg_stat_activity GROUP BY 1")
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
	for _, key := range budgetOrder {
		b := s.budgets[key]
		line := fmt.Sprintf("soak connections %s: peak=%d budget=%d", b.name, b.peak, b.limit)
		if key == appDedName || key == relayDedName {
			line += fmt.Sprintf(" (peak on server 1=%d, server 2=%d)", b.perServer[0], b.perServer[1])
		}
		lines = append(lines, line)
		if len(b.over) > 0 {
			over = append(over, fmt.Sprintf("%s above its budget of %d: %v", b.name, b.limit, b.over))
		}
	}
	lines = append(lines, fmt.Sprintf("soak connections sampled %d times (%d server answers skipped while a server restarted)", s.samples, s.skipped))
	return lines, over
}
