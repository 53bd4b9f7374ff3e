package neo4j_test

import (
	"context"
	"testing"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// cutDriver is a driver whose sessions count each transaction or
// auto-commit statement as a step of the cut: at the armed one the
// context is cancelled, as a process killed there would leave it.
type cutDriver struct {
	drv.DriverWithContext
	cut tenancytest.Cutter
}

func (d *cutDriver) NewSession(ctx context.Context, c drv.SessionConfig) drv.SessionWithContext {
	return &cutSession{d.DriverWithContext.NewSession(ctx, c), d}
}

type cutSession struct {
	drv.SessionWithContext
	d *cutDriver
}

func (s *cutSession) ExecuteRead(ctx context.Context, work drv.ManagedTransactionWork, c ...func(*drv.TransactionConfig)) (any, error) {
	s.d.cut.Step(ctx)
	return s.SessionWithContext.ExecuteRead(ctx, work, c...)
}

func (s *cutSession) ExecuteWrite(ctx context.Context, work drv.ManagedTransactionWork, c ...func(*drv.TransactionConfig)) (any, error) {
	s.d.cut.Step(ctx)
	return s.SessionWithContext.ExecuteWrite(ctx, work, c...)
}

func (s *cutSession) Run(ctx context.Context, cypher string, params map[string]any, c ...func(*drv.TransactionConfig)) (drv.ResultWithContext, error) {
	s.d.cut.Step(ctx)
	return s.SessionWithContext.Run(ctx, cypher, params, c...)
}

// TestOffboardCutNeo4j: an offboard of C's tagged graph cut at each
// transaction or statement it runs in turn (its verifier's too), then
// rerun, leaves nothing of C and B's graph as it was.
func TestOffboardCutNeo4j(t *testing.T) {
	s := testsvc.Neo4j(t)
	d := directTo(t, s)
	label := uniqueLabel(t)
	t.Cleanup(func() { d.removeLabel(label) })
	real, err := drv.NewDriverWithContext(s.URI, authOf(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = real.Close(context.Background()) })
	cut := &cutDriver{DriverWithContext: real}
	r := archiveNeo4jAppOn(t, neo4j.Use(cut))
	b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	for _, id := range []tenancy.ID{b, c} {
		t.Cleanup(func() { _, _ = r.Tenants.Offboard(context.Background(), id) })
	}
	write := func(ctx context.Context) error {
		return r.Graph.Write(ctx, func(ctx context.Context, ops neo4j.Ops) error {
			var prev string
			for i := range 5 {
				n, err := ops.CreateNode(ctx, []string{label}, map[string]any{"i": int64(i)})
				if err != nil {
					return err
				}
				if prev != "" {
					if _, err := ops.CreateRelationship(ctx, prev, n.ID, "NEXT", nil); err != nil {
						return err
					}
				}
				prev = n.ID
			}
			return nil
		})
	}
	if err := write(tenancy.WithTenant(context.Background(), b)); err != nil {
		t.Fatal(err)
	}
	cuts := tenancytest.CheckOffboardCut(t, tenancytest.OffboardCut{Tenants: r.Tenants, Target: c, Other: b, Write: write, Most: 100, Cut: cut.cut.Cut})
	if cuts == 0 {
		t.Fatal("no offboard was cut")
	}
	t.Logf("the offboard was cut at each of its %d transactions", cuts)
}
