package neo4j

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j/dbtype"
)

// An archived property value is JSON where JSON keeps its type (a string,
// a boolean, an integer, a list of them) and a one-key object naming the
// Neo4j type otherwise: {"float": "1.5"} (an integer and a float are
// different properties to Neo4j, and JSON cannot tell 1 from 1.0),
// {"bytes": base64}, {"date"}, {"localtime"}, {"time"},
// {"localdatetime"}, {"datetime"} (with "zone" for a named zone),
// {"duration": {months, days, seconds, nanos}}, {"point": {srid, x, y[,
// z]}}. Neo4j has no map property, so an object is always such a value.

const (
	layoutLocalTime     = "15:04:05.999999999"
	layoutTime          = "15:04:05.999999999Z07:00"
	layoutLocalDateTime = "2006-01-02T15:04:05.999999999"
)

type archivedPoint struct {
	SRID uint32   `json:"srid"`
	X    float64  `json:"x"`
	Y    float64  `json:"y"`
	Z    *float64 `json:"z,omitempty"`
}

type archivedDuration struct {
	Months  int64 `json:"months"`
	Days    int64 `json:"days"`
	Seconds int64 `json:"seconds"`
	Nanos   int   `json:"nanos"`
}

// encodeValue is v in the archive's form.
func encodeValue(v any) (any, error) {
	switch x := v.(type) {
	case string, bool, int64:
		return x, nil
	case float64:
		return map[string]any{"float": strconv.FormatFloat(x, 'g', -1, 64)}, nil
	case []byte:
		return map[string]any{"bytes": base64.StdEncoding.EncodeToString(x)}, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = encodeValue(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case dbtype.Date:
		return map[string]any{"date": x.Time().Format(time.DateOnly)}, nil
	case dbtype.LocalTime:
		return map[string]any{"localtime": x.Time().Format(layoutLocalTime)}, nil
	case dbtype.Time:
		return map[string]any{"time": x.Time().Format(layoutTime)}, nil
	case dbtype.LocalDateTime:
		return map[string]any{"localdatetime": x.Time().Format(layoutLocalDateTime)}, nil
	case time.Time:
		m := map[string]any{"datetime": x.Format(time.RFC3339Nano)}
		if zone, _ := x.Zone(); zone != "Offset" {
			m["zone"] = x.Location().String()
		}
		return m, nil
	case dbtype.Duration:
		return map[string]any{"duration": archivedDuration{x.Months, x.Days, x.Seconds, x.Nanos}}, nil
	case dbtype.Point2D:
		return map[string]any{"point": archivedPoint{SRID: x.SpatialRefId, X: x.X, Y: x.Y}}, nil
	case dbtype.Point3D:
		z := x.Z
		return map[string]any{"point": archivedPoint{SRID: x.SpatialRefId, X: x.X, Y: x.Y, Z: &z}}, nil
	}
	return nil, fmt.Errorf("a property value of type %T has no archive form", v)
}

// decodeValue is encodeValue's inverse on a value read with UseNumber.
func decodeValue(v any) (any, error) {
	switch x := v.(type) {
	case string, bool:
		return x, nil
	case json.Number:
		return x.Int64()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = decodeValue(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		return decodeTyped(x)
	}
	return nil, fmt.Errorf("a property value %v has no Neo4j form", v)
}

func decodeTyped(m map[string]any) (any, error) {
	str := func(k string) (string, bool) { s, ok := m[k].(string); return s, ok }
	parse := func(layout, s string) (time.Time, error) { return time.Parse(layout, s) }
	switch {
	case len(m) == 1 && m["float"] != nil:
		s, _ := str("float")
		return strconv.ParseFloat(s, 64)
	case len(m) == 1 && m["bytes"] != nil:
		s, _ := str("bytes")
		return base64.StdEncoding.DecodeString(s)
	case len(m) == 1 && m["date"] != nil:
		s, _ := str("date")
		t, err := parse(time.DateOnly, s)
		return dbtype.Date(t), err
	case len(m) == 1 && m["localtime"] != nil:
		s, _ := str("localtime")
		t, err := parse(layoutLocalTime, s)
		return dbtype.LocalTime(t), err
	case len(m) == 1 && m["time"] != nil:
		s, _ := str("time")
		t, err := parse(layoutTime, s)
		return dbtype.Time(t), err
	case len(m) == 1 && m["localdatetime"] != nil:
		s, _ := str("localdatetime")
		t, err := parse(layoutLocalDateTime, s)
		return dbtype.LocalDateTime(t), err
	case m["datetime"] != nil && len(m) <= 2:
		s, _ := str("datetime")
		t, err := parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, err
		}
		if z, ok := str("zone"); ok {
			loc, err := time.LoadLocation(z)
			if err != nil {
				return nil, err
			}
			return t.In(loc), nil
		}
		_, off := t.Zone()
		return t.In(time.FixedZone("Offset", off)), nil
	case len(m) == 1 && m["duration"] != nil:
		var d archivedDuration
		if err := remarshal(m["duration"], &d); err != nil {
			return nil, err
		}
		return dbtype.Duration{Months: d.Months, Days: d.Days, Seconds: d.Seconds, Nanos: d.Nanos}, nil
	case len(m) == 1 && m["point"] != nil:
		var p archivedPoint
		if err := remarshal(m["point"], &p); err != nil {
			return nil, err
		}
		if p.Z != nil {
			return dbtype.Point3D{X: p.X, Y: p.Y, Z: *p.Z, SpatialRefId: p.SRID}, nil
		}
		return dbtype.Point2D{X: p.X, Y: p.Y, SpatialRefId: p.SRID}, nil
	}
	return nil, fmt.Errorf("an object %v is not one of the archive's typed values", m)
}

func remarshal(v any, into any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}
