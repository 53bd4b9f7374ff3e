package document_test

import (
	"testing"

	"github.com/tenantwire/tenantwire/document"
)

func TestQueryValidate(t *testing.T) {
	ok := []document.Query{
		{},
		{Filters: []document.Filter{{Field: "qty", Op: document.Gte, Value: 3}}, OrderBy: "item", Desc: true, Limit: 10},
		{Filters: []document.Filter{{Field: "_done2", Op: document.Eq, Value: true}}},
	}
	for _, q := range ok {
		if err := q.Validate(); err != nil {
			t.Errorf("%+v: %v", q, err)
		}
	}
	bad := []document.Query{
		{Filters: []document.Filter{{Field: "", Op: document.Eq, Value: 1}}},
		{Filters: []document.Filter{{Field: "a'b", Op: document.Eq, Value: 1}}},
		{Filters: []document.Filter{{Field: "2x", Op: document.Eq, Value: 1}}},
		{Filters: []document.Filter{{Field: "a", Op: "LIKE", Value: "x"}}},
		{Filters: []document.Filter{{Field: "a", Op: document.Eq, Value: []int{1}}}},
		{OrderBy: "a;drop"},
		{Limit: -1},
	}
	for _, q := range bad {
		if err := q.Validate(); err == nil {
			t.Errorf("%+v was accepted", q)
		}
	}
}
