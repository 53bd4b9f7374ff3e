// Package capability is a stub of tenantwire's.
package capability

import "context"

type Counter interface {
	Add(ctx context.Context, name string, delta int64) (int64, error)
	Get(ctx context.Context, name string) (int64, error)
}
