package neo4j

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// TenantProperty is the property the tagged tier stamps on every node and
// relationship it writes and filters every pattern element on. User
// properties may not use it.
const TenantProperty = "tenant_id"

// stmt is one built statement: Cypher text with every value a parameter.
type stmt struct {
	cypher string
	params map[string]any
}

// builder builds the graph route's statements. When tagged, every node and
// relationship of every pattern carries `x.tenant_id = $tenant` (a path's
// elements through all(... IN nodes(p)/relationships(p) ...)), and every
// element written is stamped. Untagged, every node variable carries `NOT
// x:TenantwireMigration` instead. Either way no call reaches the migration
// history, and no label or type may be one of the framework's.
type builder struct {
	tagged bool
	tenant string
	// module and route name the refusals.
	module, route string
}

// is is the tenant predicate on variable v, or "" when not tagged.
func (b builder) is(v string) string {
	if !b.tagged {
		return ""
	}
	return v + "." + TenantProperty + " = $tenant"
}

// node is the condition on node variable v: tagged, the tenant predicate
// (history nodes carry no tenant); untagged, that v is no history node, so
// a route on a database every tenant shares cannot read, match or change
// the records the migration checks trust.
func (b builder) node(v string) string {
	if b.tagged {
		return b.is(v)
	}
	return "NOT " + v + ":" + historyLabel
}

// stamp is the SET clause stamping v, or "".
func (b builder) stamp(v string) string {
	if !b.tagged {
		return ""
	}
	return " SET " + v + "." + TenantProperty + " = $tenant"
}

// where joins the non-empty conditions with AND.
func where(conds ...string) string {
	var out []string
	for _, c := range conds {
		if c != "" {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(out, " AND ")
}

func (b builder) params(kv ...any) map[string]any {
	p := make(map[string]any, len(kv)/2+1)
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	if b.tagged {
		p["tenant"] = b.tenant
	}
	return p
}

// name quotes a label or relationship type, refusing the framework's own
// (reserved_name).
func (b builder) name(what, s string) (string, error) {
	q, err := quote(what, s)
	if err != nil {
		return "", err
	}
	if e := rules.ReservedName(b.module, b.route, what, s); e != nil {
		return "", e
	}
	return q, nil
}

func (b builder) labelList(labels []string) (string, error) {
	var s strings.Builder
	for _, l := range labels {
		q, err := b.name("label", l)
		if err != nil {
			return "", err
		}
		s.WriteString(":" + q)
	}
	return s.String(), nil
}

// userProps refuses the tenant property (reserved_name) and invalid keys;
// a nil map becomes empty so that `$props` is always a map.
func (b builder) userProps(props map[string]any) (map[string]any, error) {
	for k := range props {
		if _, err := quote("property key", k); err != nil {
			return nil, err
		}
		if k == TenantProperty {
			return nil, &tenancy.Error{Code: tenancy.CodeReservedName, Module: b.module, Backend: rules.Name, Route: b.route,
				Detail: fmt.Sprintf("property %q is the tenant marker the adapter stamps and filters on", TenantProperty),
				Fix:    fmt.Sprintf("rename the property: %q is the adapter's, on every route", TenantProperty)}
		}
	}
	if props == nil {
		props = map[string]any{}
	}
	return props, nil
}

// propConds matches v's properties: one parameter per key, keys sorted so
// the text is stable (and the server's plan cache hits). A nil value
// matches a missing property.
func (b builder) propConds(v string, props map[string]any, kv *[]any) ([]string, error) {
	if _, err := b.userProps(props); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	conds := make([]string, 0, len(keys))
	for i, k := range keys {
		q, _ := quote("property key", k)
		if props[k] == nil {
			conds = append(conds, v+"."+q+" IS NULL")
			continue
		}
		name := "p" + strconv.Itoa(i)
		conds = append(conds, v+"."+q+" = $"+name)
		*kv = append(*kv, name, props[k])
	}
	return conds, nil
}

func (b builder) createNode(labels []string, props map[string]any) (stmt, error) {
	ls, err := b.labelList(labels)
	if err != nil {
		return stmt{}, err
	}
	if props, err = b.userProps(props); err != nil {
		return stmt{}, err
	}
	return stmt{"CREATE (n" + ls + " $props)" + b.stamp("n") + " RETURN n", b.params("props", props)}, nil
}

func (b builder) matchNodeByID() string {
	return "MATCH (n)" + where("elementId(n) = $id", b.node("n"))
}

func (b builder) getNode(id string) stmt {
	return stmt{b.matchNodeByID() + " RETURN n", b.params("id", id)}
}

func (b builder) updateNode(id string, props map[string]any) (stmt, error) {
	return b.update(b.matchNodeByID(), "n", id, props)
}

// update sets props on the element v that match finds by $id.
func (b builder) update(match, v, id string, props map[string]any) (stmt, error) {
	props, err := b.userProps(props)
	if err != nil {
		return stmt{}, err
	}
	return stmt{match + " SET " + v + " += $props RETURN " + v, b.params("id", id, "props", props)}, nil
}

// deleteNode deletes the node and its relationships. Tagged, it deletes
// only relationships whose every element is the tenant's; a foreign one
// left attached makes the delete fail rather than reach across.
func (b builder) deleteNode(id string) stmt {
	if !b.tagged {
		return stmt{b.matchNodeByID() + " DETACH DELETE n RETURN count(*) AS deleted", b.params("id", id)}
	}
	return stmt{b.matchNodeByID() +
		" OPTIONAL MATCH (n)-[r]-(m)" + where(b.is("r"), b.node("m")) +
		" DELETE r WITH DISTINCT n DELETE n RETURN count(*) AS deleted", b.params("id", id)}
}

func (b builder) createRel(from, to, typ string, props map[string]any) (stmt, error) {
	t, err := b.name("relationship type", typ)
	if err != nil {
		return stmt{}, err
	}
	if props, err = b.userProps(props); err != nil {
		return stmt{}, err
	}
	return stmt{"MATCH (a), (b)" + where("elementId(a) = $from", "elementId(b) = $to", b.node("a"), b.node("b")) +
		" CREATE (a)-[r:" + t + " $props]->(b)" + b.stamp("r") + " RETURN r",
		b.params("from", from, "to", to, "props", props)}, nil
}

func (b builder) matchRelByID() string {
	return "MATCH (a)-[r]->(b)" + where("elementId(r) = $id", b.is("r"), b.node("a"), b.node("b"))
}

func (b builder) getRel(id string) stmt {
	return stmt{b.matchRelByID() + " RETURN r", b.params("id", id)}
}

func (b builder) updateRel(id string, props map[string]any) (stmt, error) {
	return b.update(b.matchRelByID(), "r", id, props)
}

func (b builder) deleteRel(id string) stmt {
	return stmt{b.matchRelByID() + " DELETE r RETURN count(*) AS deleted", b.params("id", id)}
}

// matchNodes is MATCH by labels and properties; ret is the RETURN tail.
func (b builder) matchNodes(labels []string, props map[string]any, ret string, kv ...any) (stmt, error) {
	ls, err := b.labelList(labels)
	if err != nil {
		return stmt{}, err
	}
	conds, err := b.propConds("n", props, &kv)
	if err != nil {
		return stmt{}, err
	}
	return stmt{"MATCH (n" + ls + ")" + where(append(conds, b.node("n"))...) + " " + ret, b.params(kv...)}, nil
}

func (b builder) matchRels(typ string, props map[string]any, limit int) (stmt, error) {
	t := ""
	if typ != "" {
		q, err := b.name("relationship type", typ)
		if err != nil {
			return stmt{}, err
		}
		t = ":" + q
	}
	kv := []any{"limit", limit}
	conds, err := b.propConds("r", props, &kv)
	if err != nil {
		return stmt{}, err
	}
	conds = append(conds, b.is("r"), b.node("a"), b.node("b"))
	return stmt{"MATCH (a)-[r" + t + "]->(b)" + where(conds...) + " RETURN r LIMIT $limit", b.params(kv...)}, nil
}

// traverse builds a bounded variable-length match from the start node.
// The depth bounds are validated integers (Cypher takes no parameter
// there); tagged, every node and relationship of the path is checked.
func (b builder) traverse(start string, t Traversal, maxDepth int) (stmt, error) {
	if t.MinDepth < 0 || t.MaxDepth < 1 || t.MinDepth > t.MaxDepth || t.MaxDepth > maxDepth {
		return stmt{}, fmt.Errorf("neo4j: traversal depth %d..%d: want 0 <= min <= max, 1 <= max <= %d", t.MinDepth, t.MaxDepth, maxDepth)
	}
	types := make([]string, 0, len(t.Types))
	for _, ty := range t.Types {
		q, err := b.name("relationship type", ty)
		if err != nil {
			return stmt{}, err
		}
		types = append(types, q)
	}
	rel := "["
	if len(types) > 0 {
		rel += ":" + strings.Join(types, "|")
	}
	rel += "*" + strconv.Itoa(t.MinDepth) + ".." + strconv.Itoa(t.MaxDepth) + "]"
	switch t.Direction {
	case Outgoing:
		rel = "-" + rel + "->"
	case Incoming:
		rel = "<-" + rel + "-"
	case Both:
		rel = "-" + rel + "-"
	default:
		return stmt{}, fmt.Errorf("neo4j: unknown traversal direction %d", t.Direction)
	}
	ls, err := b.labelList(t.EndLabels)
	if err != nil {
		return stmt{}, err
	}
	var all1, all2 string
	if b.tagged {
		all1 = "all(x IN nodes(p) WHERE x." + TenantProperty + " = $tenant)"
		all2 = "all(x IN relationships(p) WHERE x." + TenantProperty + " = $tenant)"
	}
	return stmt{"MATCH p = (s)" + rel + "(m" + ls + ")" +
		where("elementId(s) = $start", b.node("s"), b.node("m"), all1, all2) + " RETURN p LIMIT $limit",
		b.params("start", start, "limit", t.limit())}, nil
}

// createDatabase is the namespace tier's provisioning statement, run on
// the system database. The name is validated and quoted, never a value.
func createDatabase(name string) (stmt, error) {
	if err := ValidDatabaseName(name); err != nil {
		return stmt{}, err
	}
	q, _ := quote("database", name)
	return stmt{"CREATE DATABASE " + q + " IF NOT EXISTS WAIT", map[string]any{}}, nil
}
