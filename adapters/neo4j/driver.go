package neo4j

import (
	"context"
	"sync/atomic"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
)

// The adapter reaches the driver only through these three interfaces, so
// that the unit tests can record every session and statement. The real
// implementation below wraps neo4j.DriverWithContext.

// runner runs statements inside one managed transaction.
type runner interface {
	Run(ctx context.Context, cypher string, params map[string]any) ([]*drv.Record, error)
}

// session is the part of neo4j.SessionWithContext the adapter uses.
type session interface {
	ExecuteRead(ctx context.Context, work func(runner) (any, error)) (any, error)
	ExecuteWrite(ctx context.Context, work func(runner) (any, error)) (any, error)
	// Run is an auto-commit statement (administration commands).
	Run(ctx context.Context, cypher string, params map[string]any) ([]*drv.Record, error)
	Close(ctx context.Context) error
}

// driver opens sessions on a database ("" is the server's default).
type driver interface {
	NewSession(ctx context.Context, database string) session
	// DatabaseID is the id the server reports for database.
	DatabaseID(ctx context.Context, database string) (string, error)
	Close(ctx context.Context) error
}

type realDriver struct {
	d    drv.DriverWithContext
	warm *warmup
}

func newRealDriver(d drv.DriverWithContext) realDriver {
	return realDriver{d: d, warm: &warmup{gate: make(chan struct{}, 1)}}
}

func (r realDriver) NewSession(ctx context.Context, database string) session {
	r.warm.wait(ctx, r.d)
	return realSession{r.d.NewSession(ctx, drv.SessionConfig{DatabaseName: database})}
}

// warmup makes a driver's first connection alone. The driver (v5.28)
// initialises its connector lazily on the first dial without a lock, so
// concurrent first calls (tenants arriving at once on a fresh driver) are
// a data race. One connectivity check, made by one caller while the others
// wait, sets it up; later sessions pass on an atomic load.
type warmup struct {
	gate chan struct{} // a lock that a waiting caller's ctx can abandon
	done atomic.Bool
}

func (w *warmup) wait(ctx context.Context, d drv.DriverWithContext) {
	if w.done.Load() {
		return
	}
	select {
	case w.gate <- struct{}{}:
	case <-ctx.Done():
		return // the call fails on its own ctx
	}
	defer func() { <-w.gate }()
	if w.done.Load() {
		return
	}
	// A failed check dialled too (the connector is set up before the
	// dial); only a check cut short by its ctx may not have.
	if err := d.VerifyConnectivity(ctx); err == nil || ctx.Err() == nil {
		w.done.Store(true)
	}
}

func (r realDriver) Close(ctx context.Context) error { return r.d.Close(ctx) }

func (r realDriver) DatabaseID(ctx context.Context, database string) (string, error) {
	r.warm.wait(ctx, r.d)
	return databaseID(ctx, r.d, database)
}

type realSession struct{ s drv.SessionWithContext }

func (s realSession) ExecuteRead(ctx context.Context, work func(runner) (any, error)) (any, error) {
	return s.s.ExecuteRead(ctx, func(tx drv.ManagedTransaction) (any, error) { return work(realTx{tx}) })
}

func (s realSession) ExecuteWrite(ctx context.Context, work func(runner) (any, error)) (any, error) {
	return s.s.ExecuteWrite(ctx, func(tx drv.ManagedTransaction) (any, error) { return work(realTx{tx}) })
}

func (s realSession) Run(ctx context.Context, cypher string, params map[string]any) ([]*drv.Record, error) {
	res, err := s.s.Run(ctx, cypher, params)
	if err != nil {
		return nil, err
	}
	return res.Collect(ctx)
}

func (s realSession) Close(ctx context.Context) error { return s.s.Close(ctx) }

type realTx struct{ tx drv.ManagedTransaction }

func (t realTx) Run(ctx context.Context, cypher string, params map[string]any) ([]*drv.Record, error) {
	res, err := t.tx.Run(ctx, cypher, params)
	if err != nil {
		return nil, err
	}
	return res.Collect(ctx)
}

// streamer runs one auto-commit read and hands its records to each as
// they arrive, so an export holds no result whole. An auto-commit read is
// never retried: a record each has been given is not given again.
type streamer interface {
	Stream(ctx context.Context, cypher string, params map[string]any, each func(*drv.Record) error) error
}

func (s realSession) Stream(ctx context.Context, cypher string, params map[string]any, each func(*drv.Record) error) error {
	res, err := s.s.Run(ctx, cypher, params)
	if err != nil {
		return err
	}
	for res.Next(ctx) {
		if err := each(res.Record()); err != nil {
			_, _ = res.Consume(ctx)
			return err
		}
	}
	return res.Err()
}
