package mongo

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
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
// an int field). The values encodeValue writes are printed by appendJSON;
// any other BSON type goes through the driver's writer, which prints the
// same JSON for the types appendJSON handles. The buffer is the call's
// own, not pooled: a json.Unmarshaler in T that kept its input against
// encoding/json's contract would otherwise see another tenant's record
// overwrite it.
func decodeValue[T any](v bson.RawValue) (T, error) {
	var out T
	js, ok := appendJSON(make([]byte, 0, len(v.Value)+len(v.Value)/4+16),
		bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
	if !ok {
		var err error
		if js, err = driverJSON(v); err != nil {
			return out, fmt.Errorf("mongo: decode: %w", err)
		}
	}
	if err := json.Unmarshal(js, &out); err != nil {
		return out, fmt.Errorf("mongo: decode: %w", err)
	}
	return out, nil
}

// driverJSON is v's relaxed extended JSON as the driver writes it.
func driverJSON(v bson.RawValue) ([]byte, error) {
	js, err := bson.MarshalExtJSON(bson.D{{Key: "d", Value: v}}, false, false)
	if err != nil {
		return nil, err
	}
	// {"d":<value>}
	return js[len(`{"d":`) : len(js)-1], nil
}
