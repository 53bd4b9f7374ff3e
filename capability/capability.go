// Package capability states, once for every backend that ships them, the
// operations of the route kinds several backends offer, as document.Store
// does for documents (and outbox.Writer for outboxes): code written against
// an interface runs on any of them. Each adapter asserts at compile time
// that its route type satisfies the interface, so a method renamed in one
// adapter fails the build.
//
// Every method reads its tenant from ctx the way its route does: a
// tenant-scoped route refuses a call with no tenant bound (tenant_unbound).
package capability

import "context"

// Counter holds named atomic integer counters: postgres.Counter,
// redis.Counter, mongo.Counter.
type Counter interface {
	// Add adds delta to the counter (created at zero) and returns its new
	// value.
	Add(ctx context.Context, name string, delta int64) (int64, error)
	// Get returns the counter's value, zero when it was never set.
	Get(ctx context.Context, name string) (int64, error)
	// Delete removes the counter and reports whether it existed.
	Delete(ctx context.Context, name string) (deleted bool, err error)
}

// Search is a text index over ids: postgres.Search, mongo.Search.
type Search interface {
	// Put indexes text under id, replacing what id held.
	Put(ctx context.Context, id, text string) error
	// Remove drops id from the index, or fails with document.ErrNotFound.
	Remove(ctx context.Context, id string) error
	// Search returns up to limit hits for query.
	Search(ctx context.Context, query string, limit int) ([]Hit, error)
	// Count returns how many ids Search would match with no limit.
	Count(ctx context.Context, query string) (int, error)
}

// Hit is one search result.
type Hit struct {
	ID string
	// Rank orders PostgreSQL's hits (ts_rank); MongoDB's are ordered by id
	// and carry the indexed Text instead.
	Rank float32
	Text string
}

// Idempotency maps an idempotency key to the first result stored under it:
// postgres.Idempotency, redis.Idempotency.
type Idempotency interface {
	// Do returns key's stored result when there is one (replayed = true);
	// otherwise it runs fn and stores its result, which it returns. A
	// failing fn stores nothing. The backend's page says what concurrent
	// first calls for one key see.
	Do(ctx context.Context, key string, fn func(ctx context.Context) ([]byte, error)) (result []byte, replayed bool, err error)
	// Get returns key's stored result, if any.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Delete removes key's result so the key can be used again; deleted is
	// false when nothing was stored under key.
	Delete(ctx context.Context, key string) (deleted bool, err error)
}
