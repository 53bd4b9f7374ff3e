package mongo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

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
// an int field). The values encodeValue writes are printed by appendJSON
// into a pooled buffer; any other BSON type goes through the driver's
// writer, which prints the same JSON for the types appendJSON handles.
func decodeValue[T any](v bson.RawValue) (T, error) {
	var out T
	bp := jsonBufs.Get().(*[]byte)
	defer putJSONBuf(bp)
	js, ok := appendJSON((*bp)[:0], bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
	*bp = js
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

// jsonBufs holds the buffers decodeValue prints into; json.Unmarshal keeps
// no reference to its input.
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// putJSONBuf returns a buffer to the pool unless one large document grew
// it past what is worth keeping.
func putJSONBuf(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		*bp = (*bp)[:0]
		jsonBufs.Put(bp)
	}
}
