package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// DocumentConfig wires a document route.
type DocumentConfig struct {
	// TenantAware stamps every record with the bound tenant and filters
	// every read, update and delete on it (tagged).
	TenantAware bool
	// Read and Write name the containers; a PerTenant container on both
	// reaches namespace. Write defaults to Read.
	Read, Write naming.Name
	// Origin declares who writes the route's queries. Compiled when a
	// runtime compiler builds them from user input (a search language):
	// such a route must reach namespace.
	Origin tenancy.Origin
}

// Document adds a document route over values of type T and provides
// *Documents[T] to the app. One route per value type per app.
func Document[T any](route string, cfg DocumentConfig) Option {
	return modules.Own(func(c *config) {
		if cfg.Write == (naming.Name{}) {
			cfg.Write = cfg.Read
		}
		fr := floors.Route{
			Name: route, Kind: "document", TenantAware: cfg.TenantAware, Origin: cfg.Origin,
			Relations: []floors.Relation{containerRelation(cfg.Read, "read"), containerRelation(cfg.Write, "write")},
		}
		problems := append(containerProblems(cfg.Read), containerProblems(cfg.Write)...)
		addRoute(c, fr, problems, func(s *store) *Documents[T] {
			return &Documents[T]{s: s, cfg: cfg, r: newRouteConfig(s, fr)}
		})
	})
}

// Documents is a typed document store route.
type Documents[T any] struct {
	s   *store
	cfg DocumentConfig
	r   routeConfig
}

func (d *Documents[T]) locate(ctx context.Context, write bool) (map[entryKey]docEntry, string, entryKey, error) {
	c, role := d.cfg.Read, "read"
	if write {
		c, role = d.cfg.Write, "write"
	}
	name, tag, end, err := d.r.scope(ctx, c, role)
	if err != nil {
		return nil, "", entryKey{}, err
	}
	// The caller holds the store's lock, which the teardown takes too: the
	// call cannot outlast a teardown that began after it.
	end()
	return d.s.docs[name], name, entryKey{tenant: tag}, nil
}

// Get returns the record with id, or document.ErrNotFound.
func (d *Documents[T]) Get(ctx context.Context, id string) (document.Record[T], error) {
	d.s.mu.RLock()
	defer d.s.mu.RUnlock()
	m, _, k, err := d.locate(ctx, false)
	if err != nil {
		return document.Record[T]{}, err
	}
	k.key = id
	e, ok := m[k]
	if !ok {
		return document.Record[T]{}, document.ErrNotFound
	}
	return decode[T](id, e)
}

// Create stores v under id at version 1, or returns document.ErrExists.
func (d *Documents[T]) Create(ctx context.Context, id string, v T) (document.Version, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("memory: encode %s: %w", d.r.name, err)
	}
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	m, name, k, err := d.locate(ctx, true)
	if err != nil {
		return 0, err
	}
	if m == nil {
		m = map[entryKey]docEntry{}
		d.s.docs[name] = m
	}
	k.key = id
	if _, ok := m[k]; ok {
		return 0, document.ErrExists
	}
	m[k] = docEntry{version: 1, body: body}
	return 1, nil
}

// Update replaces the value when the stored version is expected; it returns
// the new version, document.ErrConflict, or document.ErrNotFound.
func (d *Documents[T]) Update(ctx context.Context, id string, v T, expected document.Version) (document.Version, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("memory: encode %s: %w", d.r.name, err)
	}
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	m, _, k, err := d.locate(ctx, true)
	if err != nil {
		return 0, err
	}
	k.key = id
	e, ok := m[k]
	if !ok {
		return 0, document.ErrNotFound
	}
	if document.Version(e.version) != expected {
		return 0, document.ErrConflict
	}
	m[k] = docEntry{version: e.version + 1, body: body}
	return document.Version(e.version + 1), nil
}

// Delete removes the record, or returns document.ErrNotFound.
func (d *Documents[T]) Delete(ctx context.Context, id string) error {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	m, _, k, err := d.locate(ctx, true)
	if err != nil {
		return err
	}
	k.key = id
	if _, ok := m[k]; !ok {
		return document.ErrNotFound
	}
	delete(m, k)
	return nil
}

// List returns the records matching q, ordered and limited.
func (d *Documents[T]) List(ctx context.Context, q document.Query) ([]document.Record[T], error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	d.s.mu.RLock()
	defer d.s.mu.RUnlock()
	m, _, k, err := d.locate(ctx, false)
	if err != nil {
		return nil, err
	}
	type hit struct {
		id     string
		e      docEntry
		fields map[string]any
	}
	var hits []hit
	for key, e := range m {
		if key.tenant != k.tenant {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(e.body, &fields); err != nil {
			fields = nil // a non-object value matches no field filter
		}
		if matches(fields, q.Filters) {
			hits = append(hits, hit{key.key, e, fields})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		c := 0
		if q.OrderBy != "" {
			c = compareValues(a.fields[q.OrderBy], b.fields[q.OrderBy])
		}
		if c == 0 {
			c = strings.Compare(a.id, b.id)
		}
		if q.Desc {
			c = -c
		}
		return c
	})
	if q.Limit > 0 && len(hits) > q.Limit {
		hits = hits[:q.Limit]
	}
	out := make([]document.Record[T], 0, len(hits))
	for _, h := range hits {
		rec, err := decode[T](h.id, h.e)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// Count returns how many records match q (ordering and limit ignored).
func (d *Documents[T]) Count(ctx context.Context, q document.Query) (int, error) {
	q.Limit, q.OrderBy = 0, ""
	recs, err := d.List(ctx, q)
	return len(recs), err
}

func decode[T any](id string, e docEntry) (document.Record[T], error) {
	rec := document.Record[T]{ID: id, Version: document.Version(e.version)}
	if err := json.Unmarshal(e.body, &rec.Value); err != nil {
		return document.Record[T]{}, fmt.Errorf("memory: decode %s: %w", id, err)
	}
	return rec, nil
}

func matches(fields map[string]any, filters []document.Filter) bool {
	for _, f := range filters {
		got, ok := fields[f.Field]
		if !ok {
			return false
		}
		c, comparable := compareFilter(got, f.Value)
		if !comparable {
			return false
		}
		switch f.Op {
		case document.Eq:
			ok = c == 0
		case document.Ne:
			ok = c != 0
		case document.Lt:
			ok = c < 0
		case document.Lte:
			ok = c <= 0
		case document.Gt:
			ok = c > 0
		case document.Gte:
			ok = c >= 0
		}
		if !ok {
			return false
		}
	}
	return true
}

// compareFilter compares a decoded JSON value with a filter value of the
// same JSON type; values of different types never match.
func compareFilter(got, want any) (int, bool) {
	switch w := want.(type) {
	case string:
		g, ok := got.(string)
		return strings.Compare(g, w), ok
	case bool:
		g, ok := got.(bool)
		return boolInt(g) - boolInt(w), ok
	case int:
		return compareFilter(got, float64(w))
	case int32:
		return compareFilter(got, float64(w))
	case int64:
		return compareFilter(got, float64(w))
	case float64:
		g, ok := got.(float64)
		return cmp.Compare(g, w), ok
	}
	return 0, false
}

func compareValues(a, b any) int {
	if c, ok := compareFilter(a, b); ok {
		return c
	}
	// Missing or mixed types order after present ones, deterministically.
	return cmp.Compare(fmt.Sprintf("%T", a), fmt.Sprintf("%T", b))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

var _ document.Store[struct{}] = (*Documents[struct{}])(nil)
