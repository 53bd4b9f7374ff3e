package mongo

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/tenantwire/tenantwire/document"
)

var ops = map[document.Op]string{
	document.Eq: "$eq", document.Ne: "$ne", document.Lt: "$lt",
	document.Lte: "$lte", document.Gt: "$gt", document.Gte: "$gte",
}

// queryFilter translates a validated query into the conditions that
// follow the tenant predicate. Field names were validated by
// document.Query.Validate (letters, digits, underscores), so no operator
// or path can be smuggled in through them.
func queryFilter(q document.Query) []bson.E {
	out := make([]bson.E, 0, len(q.Filters))
	for _, f := range q.Filters {
		cond := bson.D{{Key: ops[f.Op], Value: filterValue(f.Value)}}
		if f.Op == document.Ne {
			// A missing field does not differ from a value: it does not match.
			cond = append(cond, bson.E{Key: "$exists", Value: true})
		}
		out = append(out, bson.E{Key: fieldDoc + "." + f.Field, Value: cond})
	}
	return out
}

func filterValue(v any) any {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int32:
		return int64(n)
	}
	return v
}

// querySort orders by the named field, then by id, both in the query's
// direction.
func querySort(q document.Query) bson.D {
	dir := 1
	if q.Desc {
		dir = -1
	}
	if q.OrderBy == "" {
		return bson.D{{Key: fieldID, Value: dir}}
	}
	return bson.D{{Key: fieldDoc + "." + q.OrderBy, Value: dir}, {Key: fieldID, Value: dir}}
}
