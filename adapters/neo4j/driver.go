package neo4j

import (
	"context"

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
	Close(ctx context.Context) error
}

type realDriver struct{ d drv.DriverWithContext }

func (r realDriver) NewSession(ctx context.Context, database string) session {
	return realSession{r.d.NewSession(ctx, drv.SessionConfig{DatabaseName: database})}
}

func (r realDriver) Close(ctx context.Context) error { return r.d.Close(ctx) }

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
