package mongo

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Values are stored by their JSON form, so that filters and ordering name
// the same top-level JSON fields as every other document adapter (struct
// json tags, not bson tags, decide the field names).

// encodeValue converts v to a BSON value through its JSON encoding:
// objects become documents, integral numbers int64, other numbers double.
func encodeValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	return fromJSON(x), nil
}

func fromJSON(x any) any {
	switch t := x.(type) {
	case map[string]any:
		d := make(bson.D, 0, len(t))
		for k, v := range t {
			d = append(d, bson.E{Key: k, Value: fromJSON(v)})
		}
		return d
	case []any:
		a := make(bson.A, len(t))
		for i, v := range t {
			a[i] = fromJSON(v)
		}
		return a
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return n
		}
		f, _ := t.Float64()
		return f
	}
	return x
}

// decodeValue decodes the stored value v (a field of a stored document)
// into T, through relaxed extended JSON, the inverse of encodeValue
// (which stores integral numbers as int64, so no integral double reaches
// an int field).
func decodeValue[T any](v bson.RawValue) (T, error) {
	var out struct {
		D T `json:"d"`
	}
	js, err := bson.MarshalExtJSON(bson.D{{Key: "d", Value: v}}, false, false)
	if err != nil {
		return out.D, fmt.Errorf("mongo: decode: %w", err)
	}
	if err := json.Unmarshal(js, &out); err != nil {
		return out.D, fmt.Errorf("mongo: decode: %w", err)
	}
	return out.D, nil
}
