package neo4j

import (
	"context"
	"strings"
	"sync"
	"testing"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/dbtype"
	"github.com/tenantwire/tenantwire/modules"
	"go.uber.org/fx"
)

// The recording driver below stands in for a Neo4j server in unit tests.
// It records, for every statement, which driver ran it, on which
// database, in which session and transaction mode, with which Cypher and
// parameters, and answers with well-formed records: it covers what one
// Community server cannot show (per-tenant databases) and what a server
// never reports (which session ran what). boundary_test.go and
// server_ops_test.go run the same routes against real servers.

type call struct {
	driver   string
	database string
	session  int
	mode     string // read, write, auto
	cypher   string
	params   map[string]any
}

type recorder struct {
	mu       sync.Mutex
	calls    []call
	sessions []string // "driver/database" per opened session
	closed   []string // drivers closed
	sessionN int
	// reply overrides the default answer when set.
	reply func(call) ([]*drv.Record, error)
}

func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func (r *recorder) opened() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sessions...)
}

type fakeDriver struct {
	name string
	rec  *recorder
}

func (d *fakeDriver) NewSession(_ context.Context, database string) session {
	d.rec.mu.Lock()
	defer d.rec.mu.Unlock()
	d.rec.sessionN++
	d.rec.sessions = append(d.rec.sessions, d.name+"/"+database)
	return &fakeSession{d: d, database: database, id: d.rec.sessionN}
}

// DatabaseID is the endpoint and the database, as a server would tell
// databases apart.
func (d *fakeDriver) DatabaseID(_ context.Context, database string) (string, error) {
	return d.name + "/" + strings.ToLower(database), nil
}

func (d *fakeDriver) Close(context.Context) error {
	d.rec.mu.Lock()
	defer d.rec.mu.Unlock()
	d.rec.closed = append(d.rec.closed, d.name)
	return nil
}

type fakeSession struct {
	d        *fakeDriver
	database string
	id       int
}

type fakeTx struct {
	s    *fakeSession
	mode string
}

func (s *fakeSession) ExecuteRead(_ context.Context, work func(runner) (any, error)) (any, error) {
	return work(fakeTx{s, "read"})
}

func (s *fakeSession) ExecuteWrite(_ context.Context, work func(runner) (any, error)) (any, error) {
	return work(fakeTx{s, "write"})
}

func (s *fakeSession) Run(ctx context.Context, cypher string, params map[string]any) ([]*drv.Record, error) {
	return fakeTx{s, "auto"}.Run(ctx, cypher, params)
}

func (s *fakeSession) Close(context.Context) error { return nil }

func (t fakeTx) Run(_ context.Context, cypher string, params map[string]any) ([]*drv.Record, error) {
	c := call{driver: t.s.d.name, database: t.s.database, session: t.s.id, mode: t.mode, cypher: cypher, params: params}
	rec := t.s.d.rec
	rec.mu.Lock()
	rec.calls = append(rec.calls, c)
	reply := rec.reply
	rec.mu.Unlock()
	if reply != nil {
		return reply(c)
	}
	return defaultReply(c), nil
}

func record(key string, v any) *drv.Record { return &drv.Record{Keys: []string{key}, Values: []any{v}} }

var (
	fakeNode = dbtype.Node{ElementId: "4:db:1", Labels: []string{"Person"},
		Props: map[string]any{"name": "ada", TenantProperty: "x"}}
	fakeRel = dbtype.Relationship{ElementId: "5:db:1", StartElementId: "4:db:1", EndElementId: "4:db:2",
		Type: "KNOWS", Props: map[string]any{"since": int64(1), TenantProperty: "x"}}
)

// defaultReply answers by the statement's RETURN clause.
func defaultReply(c call) []*drv.Record {
	switch q := c.cypher; {
	case strings.HasPrefix(q, "SHOW DATABASES"): // no database exists
		return nil
	case strings.Contains(q, " AS deleted"), strings.Contains(q, " AS n"):
		return []*drv.Record{record("n", int64(1))}
	case strings.Contains(q, "RETURN n"):
		return []*drv.Record{record("n", fakeNode)}
	case strings.Contains(q, "RETURN r"):
		return []*drv.Record{record("r", fakeRel)}
	case strings.Contains(q, "RETURN p"):
		return []*drv.Record{record("p", dbtype.Path{Nodes: []dbtype.Node{fakeNode, fakeNode}, Relationships: []dbtype.Relationship{fakeRel}})}
	}
	return nil
}

// withFake runs the module's plain routes on a recording driver.
func withFake(name string, rec *recorder) Option {
	return modules.Own(func(c *config) { c.fake = &fakeDriver{name: name, rec: rec} })
}

// withFakeRouted makes the routed driver open a recording driver named by
// each tenant's endpoint.
func withFakeRouted(rec *recorder) Option {
	return modules.Own(func(c *config) {
		c.openFake = func(endpoint string) driver { return &fakeDriver{name: endpoint, rec: rec} }
	})
}

// build starts the app (no hook dials) and returns the named route.
func build[T any](t *testing.T, route string, opts ...Option) T {
	t.Helper()
	var out T
	app := fx.New(fx.NopLogger, Module("m", opts...),
		fx.Invoke(fx.Annotate(func(v T) { out = v }, fx.ParamTags(`name:"`+route+`"`))))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return out
}

// Stream hands Run's records to each, as the real session streams them.
func (s *fakeSession) Stream(ctx context.Context, cypher string, params map[string]any, each func(*drv.Record) error) error {
	recs, err := fakeTx{s, "stream"}.Run(ctx, cypher, params)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := each(r); err != nil {
			return err
		}
	}
	return nil
}
