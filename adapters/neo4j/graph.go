package neo4j

import (
	"context"
	"fmt"
	"sync/atomic"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/dbtype"

	"github.com/tenantwire/tenantwire/document"
)

// ErrNotFound: no node or relationship with that id is visible to the bound
// tenant. errors.Is also matches document.ErrNotFound.
var ErrNotFound = fmt.Errorf("neo4j: %w", document.ErrNotFound)

// Node is a node as the route returns it; ID is its element id. The tenant
// property is the adapter's and is not in Props.
type Node struct {
	ID     string
	Labels []string
	Props  map[string]any
}

// Relationship is a relationship; From and To are element ids.
type Relationship struct {
	ID       string
	Type     string
	From, To string
	Props    map[string]any
}

// Path is one traversal result, from the start node outwards.
type Path struct {
	Nodes         []Node
	Relationships []Relationship
}

// Direction is a traversal's direction from its start node.
type Direction uint8

const (
	Outgoing Direction = iota
	Incoming
	Both
)

// Traversal is a bounded variable-length match from a start node.
type Traversal struct {
	// Types restricts the relationship types followed; empty follows any.
	Types     []string
	Direction Direction
	// MinDepth and MaxDepth bound the path length; MaxDepth is required
	// and capped by the route's MaxDepth option.
	MinDepth, MaxDepth int
	// EndLabels restricts the node the path ends on.
	EndLabels []string
	// Limit caps the paths returned (default DefaultLimit).
	Limit int
}

// DefaultLimit is the cap on rows a match or traversal returns when its
// limit is unset.
const DefaultLimit = 1000

func (t Traversal) limit() int { return limitOr(t.Limit) }

func limitOr(n int) int {
	if n <= 0 {
		return DefaultLimit
	}
	return n
}

// Ops are the structured graph operations. A *Graph runs each in a
// transaction of its own; the ops Read and Write hand their function run
// them in that one transaction. Code written against Ops runs either way.
type Ops interface {
	// CreateNode creates a node with labels and properties.
	CreateNode(ctx context.Context, labels []string, props map[string]any) (Node, error)
	// GetNode returns the node with element id id, or ErrNotFound.
	GetNode(ctx context.Context, id string) (Node, error)
	// UpdateNode merges props into the node (a nil value removes the key).
	UpdateNode(ctx context.Context, id string, props map[string]any) (Node, error)
	// DeleteNode deletes the node and its relationships, or reports
	// ErrNotFound.
	DeleteNode(ctx context.Context, id string) error
	// MatchNodes returns up to limit nodes carrying every label and equal
	// to every property given.
	MatchNodes(ctx context.Context, labels []string, props map[string]any, limit int) ([]Node, error)
	// CountNodes counts the nodes MatchNodes would match.
	CountNodes(ctx context.Context, labels []string, props map[string]any) (int, error)
	// CreateRelationship links from to to with a relationship of type
	// typ; it reports ErrNotFound when either end is not visible.
	CreateRelationship(ctx context.Context, from, to, typ string, props map[string]any) (Relationship, error)
	// GetRelationship returns the relationship with element id id, or
	// ErrNotFound.
	GetRelationship(ctx context.Context, id string) (Relationship, error)
	// UpdateRelationship merges props into the relationship.
	UpdateRelationship(ctx context.Context, id string, props map[string]any) (Relationship, error)
	// DeleteRelationship deletes the relationship, or reports ErrNotFound.
	DeleteRelationship(ctx context.Context, id string) error
	// MatchRelationships returns up to limit relationships of type typ
	// (any when empty) equal to every property given.
	MatchRelationships(ctx context.Context, typ string, props map[string]any, limit int) ([]Relationship, error)
	// Traverse follows t from the start node.
	Traverse(ctx context.Context, start string, t Traversal) ([]Path, error)
}

var (
	_ Ops = (*Graph)(nil)
	_ Ops = (*txn)(nil)
)

// Graph is a structured graph route. Each call reads its tenant from ctx
// (when the route is tenant-scoped) and runs in a transaction of its own;
// Read and Write run several calls in one transaction.
type Graph struct{ r *route }

// Name is the route's name.
func (g *Graph) Name() string { return g.r.spec.name }

// Write runs fn in one write transaction pinned to the tenant bound to ctx
// and to its driver and database. The driver may retry fn on transient
// errors, so fn must be safe to run again.
func (g *Graph) Write(ctx context.Context, fn func(ctx context.Context, ops Ops) error) error {
	return g.r.transact(ctx, true, func(ctx context.Context, t *txn) error { return fn(ctx, t) })
}

// Read is Write for a read transaction: write calls inside it are refused.
func (g *Graph) Read(ctx context.Context, fn func(ctx context.Context, ops Ops) error) error {
	return g.r.transact(ctx, false, func(ctx context.Context, t *txn) error { return fn(ctx, t) })
}

func one[T any](g *Graph, ctx context.Context, write bool, op func(ctx context.Context, tx *txn) (T, error)) (T, error) {
	var out T
	err := g.r.transact(ctx, write, func(ctx context.Context, tx *txn) error {
		var err error
		out, err = op(ctx, tx)
		return err
	})
	return out, err
}

// CreateNode creates a node with labels and properties.
func (g *Graph) CreateNode(ctx context.Context, labels []string, props map[string]any) (Node, error) {
	return one(g, ctx, true, func(ctx context.Context, tx *txn) (Node, error) { return tx.CreateNode(ctx, labels, props) })
}

// GetNode returns the node with element id id, or ErrNotFound.
func (g *Graph) GetNode(ctx context.Context, id string) (Node, error) {
	return one(g, ctx, false, func(ctx context.Context, tx *txn) (Node, error) { return tx.GetNode(ctx, id) })
}

// UpdateNode merges props into the node (a nil value removes the key).
func (g *Graph) UpdateNode(ctx context.Context, id string, props map[string]any) (Node, error) {
	return one(g, ctx, true, func(ctx context.Context, tx *txn) (Node, error) { return tx.UpdateNode(ctx, id, props) })
}

// DeleteNode deletes the node and its relationships, or reports ErrNotFound.
func (g *Graph) DeleteNode(ctx context.Context, id string) error {
	_, err := one(g, ctx, true, func(ctx context.Context, tx *txn) (struct{}, error) { return struct{}{}, tx.DeleteNode(ctx, id) })
	return err
}

// MatchNodes returns up to limit nodes carrying every label and equal to
// every property given.
func (g *Graph) MatchNodes(ctx context.Context, labels []string, props map[string]any, limit int) ([]Node, error) {
	return one(g, ctx, false, func(ctx context.Context, tx *txn) ([]Node, error) { return tx.MatchNodes(ctx, labels, props, limit) })
}

// CountNodes counts the nodes MatchNodes would match.
func (g *Graph) CountNodes(ctx context.Context, labels []string, props map[string]any) (int, error) {
	return one(g, ctx, false, func(ctx context.Context, tx *txn) (int, error) { return tx.CountNodes(ctx, labels, props) })
}

// CreateRelationship links from to to with a relationship of type typ; it
// reports ErrNotFound when either end is not visible.
func (g *Graph) CreateRelationship(ctx context.Context, from, to, typ string, props map[string]any) (Relationship, error) {
	return one(g, ctx, true, func(ctx context.Context, tx *txn) (Relationship, error) {
		return tx.CreateRelationship(ctx, from, to, typ, props)
	})
}

// GetRelationship returns the relationship with element id id.
func (g *Graph) GetRelationship(ctx context.Context, id string) (Relationship, error) {
	return one(g, ctx, false, func(ctx context.Context, tx *txn) (Relationship, error) { return tx.GetRelationship(ctx, id) })
}

// UpdateRelationship merges props into the relationship.
func (g *Graph) UpdateRelationship(ctx context.Context, id string, props map[string]any) (Relationship, error) {
	return one(g, ctx, true, func(ctx context.Context, tx *txn) (Relationship, error) {
		return tx.UpdateRelationship(ctx, id, props)
	})
}

// DeleteRelationship deletes the relationship, or reports ErrNotFound.
func (g *Graph) DeleteRelationship(ctx context.Context, id string) error {
	_, err := one(g, ctx, true, func(ctx context.Context, tx *txn) (struct{}, error) {
		return struct{}{}, tx.DeleteRelationship(ctx, id)
	})
	return err
}

// MatchRelationships returns up to limit relationships of type typ (any
// when empty) equal to every property given.
func (g *Graph) MatchRelationships(ctx context.Context, typ string, props map[string]any, limit int) ([]Relationship, error) {
	return one(g, ctx, false, func(ctx context.Context, tx *txn) ([]Relationship, error) {
		return tx.MatchRelationships(ctx, typ, props, limit)
	})
}

// Traverse returns the paths from start that t allows.
func (g *Graph) Traverse(ctx context.Context, start string, t Traversal) ([]Path, error) {
	return one(g, ctx, false, func(ctx context.Context, tx *txn) ([]Path, error) { return tx.Traverse(ctx, start, t) })
}

// txn is one transaction of a graph route, the Ops that Read and Write
// hand their function. Its tenant, driver and database were fixed when it
// began; every call checks that its ctx is still bound to that tenant
// (tenant_scope_changed otherwise). It is valid only inside the function
// it was passed to.
type txn struct {
	r     *route
	sc    scope
	run   runner
	write bool
	done  atomic.Bool
}

// exec checks the call's ctx against the scope and runs s.
func (tx *txn) exec(ctx context.Context, write bool, s stmt) ([]*drv.Record, error) {
	if tx.done.Load() {
		return nil, fmt.Errorf("neo4j: route %s: transaction used after its scope ended", tx.r.spec.name)
	}
	if write && !tx.write {
		return nil, fmt.Errorf("neo4j: route %s: write inside a read transaction", tx.r.spec.name)
	}
	if err := tx.r.checkScope(ctx, tx.sc); err != nil {
		return nil, err
	}
	return tx.run.Run(ctx, s.cypher, s.params)
}

func (tx *txn) b() builder { return tx.r.builder(tx.sc) }

func (tx *txn) node(ctx context.Context, write bool, s stmt, err error) (Node, error) {
	if err != nil {
		return Node{}, err
	}
	recs, err := tx.exec(ctx, write, s)
	if err != nil {
		return Node{}, err
	}
	if len(recs) == 0 {
		return Node{}, ErrNotFound
	}
	return decode[dbtype.Node](recs[0], toNode)
}

func (tx *txn) rel(ctx context.Context, write bool, s stmt, err error) (Relationship, error) {
	if err != nil {
		return Relationship{}, err
	}
	recs, err := tx.exec(ctx, write, s)
	if err != nil {
		return Relationship{}, err
	}
	if len(recs) == 0 {
		return Relationship{}, ErrNotFound
	}
	return decode[dbtype.Relationship](recs[0], toRel)
}

func (tx *txn) deleted(ctx context.Context, s stmt) error {
	recs, err := tx.exec(ctx, true, s)
	if err != nil {
		return err
	}
	n, err := count(recs)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// CreateNode: see Graph.CreateNode.
func (tx *txn) CreateNode(ctx context.Context, labels []string, props map[string]any) (Node, error) {
	s, err := tx.b().createNode(labels, props)
	return tx.node(ctx, true, s, err)
}

// GetNode: see Graph.GetNode.
func (tx *txn) GetNode(ctx context.Context, id string) (Node, error) {
	return tx.node(ctx, false, tx.b().getNode(id), nil)
}

// UpdateNode: see Graph.UpdateNode.
func (tx *txn) UpdateNode(ctx context.Context, id string, props map[string]any) (Node, error) {
	s, err := tx.b().updateNode(id, props)
	return tx.node(ctx, true, s, err)
}

// DeleteNode: see Graph.DeleteNode.
func (tx *txn) DeleteNode(ctx context.Context, id string) error {
	return tx.deleted(ctx, tx.b().deleteNode(id))
}

// MatchNodes: see Graph.MatchNodes.
func (tx *txn) MatchNodes(ctx context.Context, labels []string, props map[string]any, limit int) ([]Node, error) {
	s, err := tx.b().matchNodes(labels, props, "RETURN n LIMIT $limit", "limit", limitOr(limit))
	return readAll[dbtype.Node](ctx, tx, s, err, toNode)
}

// CountNodes: see Graph.CountNodes.
func (tx *txn) CountNodes(ctx context.Context, labels []string, props map[string]any) (int, error) {
	s, err := tx.b().matchNodes(labels, props, "RETURN count(n) AS n")
	if err != nil {
		return 0, err
	}
	recs, err := tx.exec(ctx, false, s)
	if err != nil {
		return 0, err
	}
	return count(recs)
}

// CreateRelationship: see Graph.CreateRelationship.
func (tx *txn) CreateRelationship(ctx context.Context, from, to, typ string, props map[string]any) (Relationship, error) {
	s, err := tx.b().createRel(from, to, typ, props)
	return tx.rel(ctx, true, s, err)
}

// GetRelationship: see Graph.GetRelationship.
func (tx *txn) GetRelationship(ctx context.Context, id string) (Relationship, error) {
	return tx.rel(ctx, false, tx.b().getRel(id), nil)
}

// UpdateRelationship: see Graph.UpdateRelationship.
func (tx *txn) UpdateRelationship(ctx context.Context, id string, props map[string]any) (Relationship, error) {
	s, err := tx.b().updateRel(id, props)
	return tx.rel(ctx, true, s, err)
}

// DeleteRelationship: see Graph.DeleteRelationship.
func (tx *txn) DeleteRelationship(ctx context.Context, id string) error {
	return tx.deleted(ctx, tx.b().deleteRel(id))
}

// MatchRelationships: see Graph.MatchRelationships.
func (tx *txn) MatchRelationships(ctx context.Context, typ string, props map[string]any, limit int) ([]Relationship, error) {
	s, err := tx.b().matchRels(typ, props, limitOr(limit))
	return readAll[dbtype.Relationship](ctx, tx, s, err, toRel)
}

// Traverse: see Graph.Traverse.
func (tx *txn) Traverse(ctx context.Context, start string, t Traversal) ([]Path, error) {
	s, err := tx.b().traverse(start, t, tx.r.spec.maxDepth)
	return readAll[dbtype.Path](ctx, tx, s, err, func(p dbtype.Path) Path {
		out := Path{Nodes: make([]Node, len(p.Nodes)), Relationships: make([]Relationship, len(p.Relationships))}
		for i, n := range p.Nodes {
			out.Nodes[i] = toNode(n)
		}
		for i, r := range p.Relationships {
			out.Relationships[i] = toRel(r)
		}
		return out
	})
}

func decode[V, T any](rec *drv.Record, conv func(V) T) (T, error) {
	var zero T
	if len(rec.Values) == 0 {
		return zero, fmt.Errorf("neo4j: empty record")
	}
	v, ok := rec.Values[0].(V)
	if !ok {
		return zero, fmt.Errorf("neo4j: unexpected %T in result, want %T", rec.Values[0], *new(V))
	}
	return conv(v), nil
}

// readAll runs the read statement s (or returns err, its build's error)
// and converts each record's first value.
func readAll[V, T any](ctx context.Context, tx *txn, s stmt, err error, conv func(V) T) ([]T, error) {
	if err != nil {
		return nil, err
	}
	recs, err := tx.exec(ctx, false, s)
	if err != nil {
		return nil, err
	}
	return decodeAll[V](recs, conv)
}

func decodeAll[V, T any](recs []*drv.Record, conv func(V) T) ([]T, error) {
	out := make([]T, 0, len(recs))
	for _, rec := range recs {
		v, err := decode(rec, conv)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func count(recs []*drv.Record) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	return decode(recs[0], func(n int64) int { return int(n) })
}

func toNode(n dbtype.Node) Node {
	return Node{ID: n.ElementId, Labels: n.Labels, Props: withoutTenant(n.Props)}
}

func toRel(r dbtype.Relationship) Relationship {
	return Relationship{ID: r.ElementId, Type: r.Type, From: r.StartElementId, To: r.EndElementId, Props: withoutTenant(r.Props)}
}

func withoutTenant(p map[string]any) map[string]any {
	if _, ok := p[TenantProperty]; !ok {
		return p
	}
	out := make(map[string]any, len(p))
	for k, v := range p {
		if k != TenantProperty {
			out[k] = v
		}
	}
	return out
}
