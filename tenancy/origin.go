package tenancy

import "fmt"

// Origin says who wrote a route's statement text. The zero value is
// Structured. Origin is a wiring fact: no statement is parsed to infer it.
type Origin uint8

const (
	// Structured: the framework builds the statement from typed spec
	// elements and places every predicate itself.
	Structured Origin = iota
	// Compiled: a trusted compiler writes it per request, declaring what it
	// reads.
	Compiled
	// Raw: an engine-specific string nothing can rewrite or verify.
	Raw
)

// Origins lists every origin.
var Origins = [...]Origin{Structured, Compiled, Raw}

var originNames = [...]string{"structured", "compiled", "raw"}

// originFloors is the one floor of each origin. Verification raises
// confidence in a claim but does not create a boundary, so compiled text
// needs a container and raw text a connection of its own.
var originFloors = [...]Tier{None, Namespace, Dedicated}

// Valid reports whether o is a known origin.
func (o Origin) Valid() bool { return int(o) < len(originNames) }

func (o Origin) String() string {
	if !o.Valid() {
		return fmt.Sprintf("origin(%d)", uint8(o))
	}
	return originNames[o]
}

// Floor returns the weakest tier a route of this origin may reach. An
// unknown origin is refused with statement_origin_unknown.
func (o Origin) Floor() (Tier, error) {
	if !o.Valid() {
		return Dedicated, unknownOrigin(o.String())
	}
	return originFloors[o], nil
}

// ParseOrigin parses an origin name; an unknown name is refused with
// statement_origin_unknown.
func ParseOrigin(s string) (Origin, error) {
	for i, name := range originNames {
		if s == name {
			return Origin(i), nil
		}
	}
	return Structured, unknownOrigin(fmt.Sprintf("%q", s))
}

func unknownOrigin(what string) *Error {
	return &Error{
		Code:   CodeStatementOriginUnknown,
		Detail: "unknown statement origin " + what,
		Fix:    "declare structured, compiled or raw; an origin nobody can name has no floor, so it is refused",
	}
}

// MarshalText implements encoding.TextMarshaler.
func (o Origin) MarshalText() ([]byte, error) {
	if !o.Valid() {
		return nil, unknownOrigin(o.String())
	}
	return []byte(originNames[o]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *Origin) UnmarshalText(b []byte) error {
	v, err := ParseOrigin(string(b))
	if err != nil {
		return err
	}
	*o = v
	return nil
}
