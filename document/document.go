// Package document holds the types every document-store adapter shares:
// records of typed Go values with an optimistic version, and the queries
// the adapters translate (filters, ordering, limit). Adapters place the
// tenant predicate themselves; a Query never carries a tenant.
package document

import (
	"context"
	"errors"
	"fmt"
)

// Version is a record's optimistic-concurrency version. A created record
// has version 1; every update increments it.
type Version int64

// Record is a stored value with its id and version.
type Record[T any] struct {
	ID      string
	Version Version
	Value   T
}

var (
	// ErrNotFound: no record with that id is visible to the bound tenant.
	// A record of another tenant is indistinguishable from a missing one.
	ErrNotFound = errors.New("document: not found")
	// ErrConflict: the record's version is not the expected one.
	ErrConflict = errors.New("document: version conflict")
	// ErrExists: a record with that id already exists for the tenant.
	ErrExists = errors.New("document: already exists")
)

// Op is a filter comparison.
type Op string

const (
	Eq  Op = "="
	Ne  Op = "!="
	Lt  Op = "<"
	Lte Op = "<="
	Gt  Op = ">"
	Gte Op = ">="
)

// Filter compares one top-level JSON field of the stored value with a
// string, number or bool.
type Filter struct {
	Field string
	Op    Op
	Value any
}

// Query selects records: every filter must match; OrderBy names a top-level
// JSON field ("" orders by id); Limit 0 means no limit.
type Query struct {
	Filters []Filter
	OrderBy string
	Desc    bool
	Limit   int
}

// Validate refuses what no adapter can run: unknown operators, empty or
// unsafe field names, unsupported value types, negative limits.
func (q Query) Validate() error {
	for _, f := range q.Filters {
		if err := validField(f.Field); err != nil {
			return err
		}
		switch f.Op {
		case Eq, Ne, Lt, Lte, Gt, Gte:
		default:
			return fmt.Errorf("document: unknown filter operator %q", f.Op)
		}
		switch f.Value.(type) {
		case string, bool, int, int32, int64, float64:
		default:
			return fmt.Errorf("document: filter on %q: unsupported value type %T (want string, bool, int or float64)", f.Field, f.Value)
		}
	}
	if q.OrderBy != "" {
		if err := validField(q.OrderBy); err != nil {
			return err
		}
	}
	if q.Limit < 0 {
		return fmt.Errorf("document: negative limit %d", q.Limit)
	}
	return nil
}

// validField accepts JSON field names of letters, digits and underscores,
// so that every adapter can place them in a statement without quoting
// surprises.
func validField(name string) error {
	if name == "" || len(name) > 63 {
		return fmt.Errorf("document: field name %q must be 1 to 63 characters", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return fmt.Errorf("document: field name %q may hold only letters, digits and underscores", name)
		}
	}
	return nil
}

// Store is what every document-store route offers, whatever the backend;
// each adapter asserts its Documents[T] implements it.
type Store[T any] interface {
	Get(ctx context.Context, id string) (Record[T], error)
	Create(ctx context.Context, id string, v T) (Version, error)
	Update(ctx context.Context, id string, v T, expected Version) (Version, error)
	Delete(ctx context.Context, id string) error
	List(ctx context.Context, q Query) ([]Record[T], error)
	Count(ctx context.Context, q Query) (int, error)
}
