package neo4j_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestArchiveImportCutNeo4j: an import of A's tagged graph (past one
// transaction of 500 nodes, and its relationships) into C cut on both
// sides of each transaction's end, then recovered as documented
// (offboard, provision, rerun), leaves C with exactly A's nodes and
// relationships, none lost and none twice.
func TestArchiveImportCutNeo4j(t *testing.T) {
	s := testsvc.Neo4j(t)
	d := directTo(t, s)
	label := uniqueLabel(t)
	t.Cleanup(func() { d.removeLabel(label) })
	var runner *migrate.Runner
	r := archiveNeo4jAppOn(t, connect(s), fx.Invoke(fx.Annotate(func(m *migrate.Runner) { runner = m }, fx.ParamTags(`name:"graph"`))))
	a, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	for _, id := range []tenancy.ID{a, c} {
		t.Cleanup(func() { _, _ = r.Tenants.Offboard(context.Background(), id) })
	}
	ctx := tenancy.WithTenant(context.Background(), a)
	err := r.Graph.Write(ctx, func(ctx context.Context, ops neo4j.Ops) error {
		var prev string
		for i := range 520 {
			n, err := ops.CreateNode(ctx, []string{label}, map[string]any{"i": int64(i)})
			if err != nil {
				return err
			}
			if i%100 == 1 {
				if _, err := ops.CreateRelationship(ctx, prev, n.ID, "NEXT", map[string]any{"at": int64(i)}); err != nil {
					return err
				}
			}
			prev = n.ID
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.Tenants.Export(context.Background(), a, &buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"family":"relationships","tier":"tagged","records":6`)) {
		t.Fatalf("A's archive does not hold its 6 relationships:\n%s", lastLine(buf.Bytes()))
	}
	left := tenancytest.CheckImportCut(t, tenancytest.ImportCut{Tenants: r.Tenants, Import: runner.Import, Module: "graph", Target: c, Archive: buf.Bytes(),
		At: []int{0, 1, 499, 500, 501, 519, 520, 521, 525}})
	if left == 0 {
		t.Errorf("no cut left a node behind: the import writes 500 nodes a transaction, so the cuts missed its writes")
	}
	t.Logf("%d of 9 cuts left part of the graph; each converged on the rerun", left)
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return b[bytes.LastIndexByte(b, '\n')+1:]
}

// TestArchiveImportsAtOnceNeo4j: two imports of one archive into C at
// once: one fills C, the other is refused (archive_target_not_empty), and
// C holds A's graph once, not twice.
func TestArchiveImportsAtOnceNeo4j(t *testing.T) {
	s := testsvc.Neo4j(t)
	d := directTo(t, s)
	label := uniqueLabel(t)
	t.Cleanup(func() { d.removeLabel(label) })
	r := archiveNeo4jApp(t, s)
	a, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	for _, id := range []tenancy.ID{a, c} {
		t.Cleanup(func() { _, _ = r.Tenants.Offboard(context.Background(), id) })
	}
	writeGraph(t, r.Graph, tenancy.WithTenant(context.Background(), a), label, "a")
	var buf bytes.Buffer
	if err := r.Tenants.Export(context.Background(), a, &buf); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- r.Tenants.Import(context.Background(), c, bytes.NewReader(buf.Bytes())) }()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) {
		t.Fatalf("two imports at once: %v and %v, want one to succeed and one refused", e1, e2)
	}
	if e := errors.Join(e1, e2); tenancy.CodeOf(e) != tenancy.CodeArchiveTargetNotEmpty {
		t.Errorf("the second import: %v, want %s", e, tenancy.CodeArchiveTargetNotEmpty)
	}
	if n := d.query("MATCH (n:`"+label+"`) WHERE n.tenant_id = $c RETURN count(n)", map[string]any{"c": c.String()})[0].Values[0].(int64); n != 3 {
		t.Errorf("C holds %d nodes, want A's 3", n)
	}
}

// TestArchiveImportsAcrossReplicasNeo4j: two replicas (two apps on one
// server) import one archive into C at once: the import claim in C's
// database lets one fill C and refuses the other
// (archive_target_not_empty), so C holds A's graph once, not twice; and
// once the first has ended, nothing of its claim is left to refuse a
// later import.
func TestArchiveImportsAcrossReplicasNeo4j(t *testing.T) {
	s := testsvc.Neo4j(t)
	d := directTo(t, s)
	label := uniqueLabel(t)
	t.Cleanup(func() { d.removeLabel(label) })
	r1, r2 := archiveNeo4jApp(t, s), archiveNeo4jApp(t, s)
	a, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	for _, id := range []tenancy.ID{a, c} {
		t.Cleanup(func() { _, _ = r1.Tenants.Offboard(context.Background(), id) })
	}
	writeGraph(t, r1.Graph, tenancy.WithTenant(context.Background(), a), label, "a")
	var buf bytes.Buffer
	if err := r1.Tenants.Export(context.Background(), a, &buf); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		errs := make(chan error, 2)
		for _, r := range []archiveApp{r1, r2} {
			go func() { errs <- r.Tenants.Import(context.Background(), c, bytes.NewReader(buf.Bytes())) }()
		}
		e1, e2 := <-errs, <-errs
		if (e1 == nil) == (e2 == nil) {
			t.Fatalf("round %d, two replicas' imports at once: %v and %v, want one to succeed and one refused", round, e1, e2)
		}
		if e := errors.Join(e1, e2); tenancy.CodeOf(e) != tenancy.CodeArchiveTargetNotEmpty {
			t.Errorf("round %d, the second import: %v, want %s", round, e, tenancy.CodeArchiveTargetNotEmpty)
		}
		if n := d.query("MATCH (n:`"+label+"`) WHERE n.tenant_id = $c RETURN count(n)", map[string]any{"c": c.String()})[0].Values[0].(int64); n != 3 {
			t.Fatalf("round %d: C holds %d nodes, want A's 3", round, n)
		}
		if _, err := r1.Tenants.Offboard(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		if _, err := r1.Tenants.Provision(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
}
