package gonotenant

import (
	"context"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tenantwire/tenantwire/capability"
	"github.com/tenantwire/tenantwire/tenancy"
)

func (s *svc) rightGo(ctx context.Context) {
	go func() {
		s.c.Add(context.WithoutCancel(ctx), "hits", 1)
	}()
	go s.c.Add(ctx, "hits", 1)
}

func (s *svc) rightHandler(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	go func() { s.c.Get(ctx, "hits") }()
}

func (s *svc) rightGroup(ctx context.Context, c capability.Counter) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		_, err := c.Get(gctx, "hits")
		return err
	})
	time.AfterFunc(time.Second, func() { c.Get(context.WithoutCancel(ctx), "hits") })
	return g.Wait()
}

// A worker that binds each job's tenant itself is a boundary.
func (s *svc) worker(ctx context.Context, id tenancy.ID) {
	go func() {
		jctx := tenancy.WithTenant(context.Background(), id)
		s.c.Get(jctx, "hits")
	}()
}
