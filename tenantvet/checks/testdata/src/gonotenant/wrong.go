package gonotenant

import (
	"context"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/capability"
)

type svc struct {
	ctx context.Context
	c   *postgres.Counter
}

func (s *svc) goStmt(ctx context.Context) {
	go func() {
		s.c.Add(context.Background(), "hits", 1) // want `gonotenant: a goroutine calls postgres.Counter.Add with context.Background\(\) instead of the incoming ctx: the tenant does not follow it and the call fails closed with tenant_unbound; pass ctx \(context.WithoutCancel\(ctx\) when the goroutine outlives the request\)`
	}()
}

func (s *svc) goDirect(ctx context.Context) {
	go s.c.Add(context.TODO(), "hits", 1) // want `gonotenant: a goroutine calls postgres.Counter.Add with context.TODO\(\) instead of the incoming ctx`
}

func (s *svc) handler(w http.ResponseWriter, r *http.Request) {
	go func() {
		s.c.Get(s.ctx, "hits") // want `gonotenant: a goroutine calls postgres.Counter.Get with the context stored in field ctx instead of the incoming r.Context\(\)`
	}()
}

func (s *svc) group(ctx context.Context, c capability.Counter) error {
	var g errgroup.Group
	g.Go(func() error {
		_, err := c.Get(context.Background(), "hits") // want `gonotenant: a goroutine calls capability.Counter.Get with context.Background\(\) instead of the incoming ctx`
		return err
	})
	var wg sync.WaitGroup
	wg.Go(func() {
		get := c.Get
		get(context.Background(), "hits") // want `gonotenant: a goroutine calls capability.Counter.Get with context.Background\(\)`
	})
	wg.Wait()
	return g.Wait()
}

func (s *svc) later(ctx context.Context) {
	time.AfterFunc(time.Second, func() {
		bg := context.Background()
		s.c.Get(bg, "hits") // want `gonotenant: a goroutine calls postgres.Counter.Get with bg \(context.Background\(\)\) instead of the incoming ctx`
	})
}

func generic[C capability.Counter](ctx context.Context, c C) {
	go func() {
		c.Add(context.Background(), "hits", 1) // want `gonotenant: a goroutine calls capability.Counter.Add with context.Background\(\)`
	}()
}

// The incoming context is the innermost function's that has one: here the
// handler literal's request.
func (s *svc) routes() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		go func() {
			s.c.Get(context.Background(), "hits") // want `gonotenant: a goroutine calls postgres.Counter.Get with context.Background\(\) instead of the incoming r.Context\(\)`
		}()
	})
}

func (s *svc) record(ctx context.Context) { s.c.Add(ctx, "hits", 1) }

func (s *svc) goHelper(ctx context.Context) {
	go s.record(context.Background()) // want `gonotenant: a goroutine calls record \(which passes it to postgres.Counter.Add\) with context.Background\(\) instead of the incoming ctx`
}
