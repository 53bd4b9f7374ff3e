// Package postgres is a stub of tenantwire's PostgreSQL adapter.
package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

type Option func()

func Use(p *pgxpool.Pool) Option { return nil }

type Counter struct{}

func (c *Counter) Add(ctx context.Context, name string, delta int64) (int64, error) { return 0, nil }
func (c *Counter) Get(ctx context.Context, name string) (int64, error)              { return 0, nil }
func (c *Counter) Name() string                                                     { return "" }

type Documents[T any] struct{}

func (d *Documents[T]) Get(ctx context.Context, id string) (T, error) { var v T; return v, nil }

type DynamicRead struct{}

func (d *DynamicRead) Query(ctx context.Context, text string, args []any, scan func(any) error) error {
	return nil
}

type Client struct{}

func (c *Client) InTx(ctx context.Context, fn func(ctx context.Context) error) error { return nil }
