package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// DocumentConfig wires a document route. Read is required; Write defaults
// to Read, as in memory.DocumentConfig. A different Read (a view over
// Write, say) is the caller's to create, while provisioning creates Write
// and History.
// History, when set, receives every version. Every relation named counts
// toward namespace, History included.
type DocumentConfig struct {
	TenantAware          bool
	Read, Write, History naming.Name
}

// Document adds a document route over values of type T, stored as jsonb,
// and provides *Documents[T].
func Document[T any](name string, dc DocumentConfig) Option {
	return modules.Own(func(c *config) {
		dc := dc // the option may be applied more than once (Placements)
		if dc.Write.IsZero() {
			dc.Write = dc.Read
		}
		dc.Read, dc.Write, dc.History = c.inShared(dc.Read), c.inShared(dc.Write), c.inShared(dc.History)
		spec := &routeSpec{name: name, kind: kindDocument, tenantAware: dc.TenantAware, typ: reflect.TypeFor[*Documents[T]]()}
		for _, rr := range []roleRel{{"read", dc.Read}, {"write", dc.Write}, {"history", dc.History}} {
			if !rr.rel.IsZero() {
				spec.rels = append(spec.rels, rr)
			}
		}
		if dc.Read.IsZero() {
			c.errs = append(c.errs, rules.WiringInvalid(c.name, name, "a document route needs a Read relation",
				"set postgres.DocumentConfig.Read, e.g. naming.Shared(name) or naming.PerTenant(name) (Write defaults to it)"))
		}
		for _, rr := range spec.rels {
			c.checkName(name, rr.rel.Base(), maxIdent, "use a lower-case table name")
		}
		spec.ddl = func(cl *Client, tenant tenancy.ID) []string {
			r := route{cl, spec}
			s := sql{tagged: spec.decision.Tagged}
			var out []string
			out = append(out, "CREATE TABLE IF NOT EXISTS "+r.qualified(dc.Write, tenant)+" ("+s.tenantColumn()+
				"id text NOT NULL, version bigint NOT NULL, value jsonb NOT NULL, "+s.key("id")+")")
			if !dc.History.IsZero() {
				out = append(out, "CREATE TABLE IF NOT EXISTS "+r.qualified(dc.History, tenant)+" ("+s.tenantColumn()+
					"seq bigserial PRIMARY KEY, id text NOT NULL, version bigint NOT NULL, value jsonb, op text NOT NULL, at timestamptz NOT NULL DEFAULT pg_catalog.now())")
			}
			return out
		}
		spec.provide = provideRoute(func(cl *Client) *Documents[T] {
			d := &Documents[T]{route: route{cl, spec}, cfg: dc}
			if !d.perTenant() {
				d.static = d.build(tenancy.ID{})
			} else {
				d.tmpl = templates(d.build, docFields, (*docStmts).field)
			}
			return d
		})
		spec.placedProvide = placedProvider(func(p *modules.PlacedRoute[*Documents[T]]) *Documents[T] { return &Documents[T]{placed: p} })
		c.routes = append(c.routes, spec)
	})
}

// Documents is a document route: typed values by id, each tenant seeing
// only its own. A record of another tenant is reported as not found.
type Documents[T any] struct {
	route
	cfg    DocumentConfig
	static *docStmts
	tmpl   []stmtTmpl // per tenant: docFields' templates, nil if none
	// placed: the route of a module with Placements, each call served by
	// the tenant's placement's route; nil otherwise.
	placed *modules.PlacedRoute[*Documents[T]]
}

type docStmts struct {
	sql
	read, write                                      string
	get, create, update, exists, delete, list, count string
}

func (d *Documents[T]) build(tenant tenancy.ID) *docStmts {
	s := sql{tagged: d.spec.decision.Tagged}
	st := &docStmts{sql: s, read: d.qualified(d.cfg.Read, tenant), write: d.qualified(d.cfg.Write, tenant)}
	w, c, v := s.where(), s.col(), s.val()
	st.get = "SELECT version, value FROM " + st.read + " WHERE " + w + "id = " + s.p(1)
	st.exists = "SELECT 1 FROM " + st.write + " WHERE " + w + "id = " + s.p(1)
	st.create = "INSERT INTO " + st.write + " (" + c + "id, version, value) VALUES (" + v + s.p(1) + ", 1, " + s.p(2) + ") ON CONFLICT DO NOTHING"
	st.update = "UPDATE " + st.write + " SET version = version + 1, value = " + s.p(2) + " WHERE " + w + "id = " + s.p(1) + " AND version = " + s.p(3) + " RETURNING " + c + "id, version, value"
	st.delete = "DELETE FROM " + st.write + " WHERE " + w + "id = " + s.p(1) + " RETURNING " + c + "id, version, value"
	st.list = "SELECT id, version, value FROM " + st.read + " WHERE " + w + "TRUE"
	st.count = "SELECT pg_catalog.count(*) FROM " + st.read + " WHERE " + w + "TRUE"
	// On a plain client a delete tells other clients' ownership gates, in
	// its own transaction (gatesync.go): the notice is the last parameter.
	notice := ""
	if d.notifies() {
		notice = ", LATERAL (SELECT pg_catalog.pg_notify('" + gateChannel + "', " + s.p(2) + ")) n"
	}
	if !d.cfg.History.IsZero() {
		h := d.qualified(d.cfg.History, tenant)
		keep := func(op string) string {
			return ", h AS (INSERT INTO " + h + " (" + c + "id, version, value, op) SELECT " + c + "id, version, value, '" + op + "' FROM w)"
		}
		st.create = "WITH w AS (" + st.create + " RETURNING " + c + "id, version, value)" + keep("create") + " SELECT pg_catalog.count(*) FROM w"
		st.update = "WITH w AS (" + st.update + ")" + keep("update") + " SELECT version FROM w"
		st.delete = "WITH w AS (" + st.delete + ")" + keep("delete") + " SELECT pg_catalog.count(*) FROM w" + notice
	} else {
		st.update = strings.TrimSuffix(st.update, " RETURNING "+c+"id, version, value") + " RETURNING version"
		if notice != "" {
			st.delete = "WITH w AS (" + st.delete + ") SELECT pg_catalog.count(*) FROM w" + notice
		} else {
			st.delete = strings.TrimSuffix(st.delete, " RETURNING "+c+"id, version, value")
		}
	}
	return st
}

// notifies reports whether the route's deletes send a notice to other
// clients' ownership gates: on a plain client, whose database other
// replicas share.
func (d *Documents[T]) notifies() bool { return d.c.routed == nil }

// begin resolves the tenant, statements and pool of one call; of a set
// rendered per call, only the statements in need are set.
func (d *Documents[T]) begin(ctx context.Context, need docNeed) (context.Context, tenancy.ID, docStmts, querier, func(), error) {
	ctx, tenant, pool, release, err := enter(ctx, d.route)
	if err != nil {
		return ctx, tenant, docStmts{}, nil, nil, err
	}
	return ctx, tenant, d.stmts(tenant, need), pool, release, nil
}

// Get returns the record id of the bound tenant, or document.ErrNotFound.
func (d *Documents[T]) Get(ctx context.Context, id string) (_ document.Record[T], err error) {
	if d.placed != nil {
		in, end, err := d.placed.Pick(ctx, false)
		if err != nil {
			return document.Record[T]{}, err
		}
		defer end()
		return in.Get(ctx, id)
	}
	defer d.notProvisioned(&err)
	var rec document.Record[T]
	ctx, tenant, st, pool, release, err := d.begin(ctx, docGet)
	if err != nil {
		return rec, err
	}
	defer release()
	var raw []byte
	// The point read builds its arguments inline: the hot path allocates
	// what a hand-written call does and nothing more.
	// An unprepared set reads in one round trip without describing: the
	// id is a Go string, which the exec mode sends as text.
	var a []any
	switch {
	case st.tagged:
		a = st.mode([]any{tenant.Bytes(), id})
	case st.unprepared:
		a = []any{pgx.QueryExecModeExec, id}
	default:
		a = []any{id}
	}
	// Scanned as int64: pgx has no plan for a named integer type and finds
	// one by reflection on every call.
	var version int64
	err = pool.QueryRow(ctx, st.get, a...).Scan(&version, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return rec, document.ErrNotFound
	}
	if err != nil {
		return rec, err
	}
	rec.ID, rec.Version = id, document.Version(version)
	return rec, json.Unmarshal(raw, &rec.Value)
}

// Create stores v as version 1, or fails with document.ErrExists.
func (d *Documents[T]) Create(ctx context.Context, id string, v T) (_ document.Version, err error) {
	if d.placed != nil {
		in, end, err := d.placed.Pick(ctx, true)
		if err != nil {
			return 0, err
		}
		defer end()
		return in.Create(ctx, id, v)
	}
	defer d.notProvisioned(&err)
	raw, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	ctx, tenant, st, pool, release, err := d.begin(ctx, docCreate)
	if err != nil {
		return 0, err
	}
	defer release()
	n, err := d.affected(ctx, pool, st.create, st.mode(args(st.tagged, tenant, id, jsonArg(raw))), !d.cfg.History.IsZero())
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, document.ErrExists
	}
	return 1, nil
}

// Update replaces the value when the stored version is expected and
// returns the new version: document.ErrConflict when the version moved,
// document.ErrNotFound when the bound tenant has no such record.
func (d *Documents[T]) Update(ctx context.Context, id string, v T, expected document.Version) (_ document.Version, err error) {
	if d.placed != nil {
		in, end, err := d.placed.Pick(ctx, true)
		if err != nil {
			return 0, err
		}
		defer end()
		return in.Update(ctx, id, v, expected)
	}
	defer d.notProvisioned(&err)
	raw, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	ctx, tenant, st, pool, release, err := d.begin(ctx, docUpdate)
	if err != nil {
		return 0, err
	}
	defer release()
	var next int64 // not document.Version: see Get
	err = pool.QueryRow(ctx, st.update, st.mode(args(st.tagged, tenant, id, jsonArg(raw), int64(expected)))...).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		var one int
		err = pool.QueryRow(ctx, d.stmts(tenant, docExists).exists, st.mode(args(st.tagged, tenant, id))...).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, document.ErrNotFound
		}
		if err != nil {
			return 0, err
		}
		return 0, document.ErrConflict
	}
	return document.Version(next), err
}

// Delete removes the record, or fails with document.ErrNotFound.
func (d *Documents[T]) Delete(ctx context.Context, id string) (err error) {
	if d.placed != nil {
		in, end, err := d.placed.Pick(ctx, true)
		if err != nil {
			return err
		}
		defer end()
		return in.Delete(ctx, id)
	}
	defer d.notProvisioned(&err)
	ctx, tenant, st, pool, release, err := d.begin(ctx, docDelete)
	if err != nil {
		return err
	}
	defer release()
	a := args(st.tagged, tenant, id)
	counted := !d.cfg.History.IsZero()
	if d.notifies() {
		a, counted = append(a, gateIDNotice(st.write, "id", tenant, id)), true
	}
	n, err := d.affected(ctx, pool, st.delete, st.mode(a), counted)
	if err != nil {
		return err
	}
	if n == 0 {
		return document.ErrNotFound
	}
	// The id may be created again by another tenant: a gate must look
	// again, once the delete is visible (a unit of work commits it later).
	d.c.afterCommit(ctx, func() { d.c.forgetOwned(d.cfg.Write, tenant, id) })
	return nil
}

// affected runs a write and returns the rows it changed; a counted
// statement (with history, or a notice) reports the count itself.
func (d *Documents[T]) affected(ctx context.Context, pool querier, stmt string, a []any, counted bool) (int64, error) {
	if !counted {
		tag, err := pool.Exec(ctx, stmt, a...)
		return tag.RowsAffected(), err
	}
	var n int64
	err := pool.QueryRow(ctx, stmt, a...).Scan(&n)
	return n, err
}

// List returns the bound tenant's records matching q.
func (d *Documents[T]) List(ctx context.Context, q document.Query) (_ []document.Record[T], err error) {
	if d.placed != nil {
		in, end, err := d.placed.Pick(ctx, false)
		if err != nil {
			return nil, err
		}
		defer end()
		return in.List(ctx, q)
	}
	defer d.notProvisioned(&err)
	if err := q.Validate(); err != nil {
		return nil, err
	}
	ctx, tenant, st, pool, release, err := d.begin(ctx, docList)
	if err != nil {
		return nil, err
	}
	defer release()
	stmt, a, err := filtered(st.list, st.sql, tenant, q, true)
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, stmt, st.mode(a)...)
	if err != nil {
		return nil, err
	}
	var out []document.Record[T]
	var raw []byte
	var rec document.Record[T]
	_, err = pgx.ForEachRow(rows, []any{&rec.ID, &rec.Version, &raw}, func() error {
		r := document.Record[T]{ID: rec.ID, Version: rec.Version}
		if err := json.Unmarshal(raw, &r.Value); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// Count returns how many of the bound tenant's records match q (its
// ordering and limit are ignored).
func (d *Documents[T]) Count(ctx context.Context, q document.Query) (_ int, err error) {
	if d.placed != nil {
		in, end, err := d.placed.Pick(ctx, false)
		if err != nil {
			return 0, err
		}
		defer end()
		return in.Count(ctx, q)
	}
	defer d.notProvisioned(&err)
	if err := q.Validate(); err != nil {
		return 0, err
	}
	ctx, tenant, st, pool, release, err := d.begin(ctx, docCount)
	if err != nil {
		return 0, err
	}
	defer release()
	stmt, a, err := filtered(st.count, st.sql, tenant, q, false)
	if err != nil {
		return 0, err
	}
	var n int
	err = pool.QueryRow(ctx, stmt, st.mode(a)...).Scan(&n)
	return n, err
}

// filtered appends q's filters, ordering and limit to a statement that
// already places the tenant predicate. Field names were validated to
// [A-Za-z0-9_] by Query.Validate; values travel as jsonb parameters.
func filtered(base string, s sql, tenant tenancy.ID, q document.Query, order bool) (string, []any, error) {
	var b strings.Builder
	b.WriteString(base)
	a := args(s.tagged, tenant)
	for _, f := range q.Filters {
		v, err := json.Marshal(f.Value)
		if err != nil {
			return "", nil, err
		}
		a = append(a, jsonArg(v))
		fmt.Fprintf(&b, " AND value->'%s' %s $%d::jsonb", f.Field, f.Op, len(a))
	}
	if !order {
		return b.String(), a, nil
	}
	b.WriteString(" ORDER BY ")
	if q.OrderBy != "" {
		fmt.Fprintf(&b, "value->'%s'", q.OrderBy)
		if q.Desc {
			b.WriteString(" DESC")
		}
		b.WriteString(", ")
	}
	b.WriteString("id")
	if q.Desc && q.OrderBy == "" {
		b.WriteString(" DESC")
	}
	if q.Limit > 0 {
		fmt.Fprintf(&b, " LIMIT %d", q.Limit)
	}
	return b.String(), a, nil
}

var _ document.Store[struct{}] = (*Documents[struct{}])(nil)
