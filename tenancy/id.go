package tenancy

import (
	"errors"
	"fmt"
)

// ID is a tenant: a UUID. The zero value is not a tenant; Bind refuses it.
// IDs are comparable and usable as map keys.
type ID struct{ b [16]byte }

// Default is the tenant a single-tenant deployment lives in, and the value
// tagged columns default to, so turning tenancy on hides no existing data.
var Default = ID{b: [16]byte{15: 1}}

// ErrInvalidID is returned (wrapped) for any string that is not a canonical
// 8-4-4-4-12 hex UUID.
var ErrInvalidID = errors.New("tenancy: invalid tenant ID (must be a canonical 8-4-4-4-12 hex UUID)")

// ParseID parses a canonical 8-4-4-4-12 hex UUID, in either case. Braces,
// URN prefixes, missing dashes and the nil UUID are refused. It does not
// allocate on success.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return ID{}, ErrInvalidID
	}
	for i, j := 0, 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return ID{}, ErrInvalidID
		}
		id.b[j] = hi<<4 | lo
		i, j = i+2, j+1
	}
	if id.IsZero() {
		return ID{}, fmt.Errorf("%w: the nil UUID is not a tenant", ErrInvalidID)
	}
	return id, nil
}

// MustParseID is ParseID that panics; for constants in tests and examples.
func MustParseID(s string) ID {
	id, err := ParseID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// IDFromBytes builds an ID from its 16 bytes; the zero array is refused.
func IDFromBytes(b [16]byte) (ID, error) {
	if b == ([16]byte{}) {
		return ID{}, fmt.Errorf("%w: the nil UUID is not a tenant", ErrInvalidID)
	}
	return ID{b: b}, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// IsZero reports whether id is the zero value, which is not a tenant.
func (id ID) IsZero() bool { return id.b == [16]byte{} }

// Bytes returns the 16 bytes of the UUID.
func (id ID) Bytes() [16]byte { return id.b }

// IsDefault reports whether id is the default tenant.
func (id ID) IsDefault() bool { return id == Default }

const hexDigits = "0123456789abcdef"

// AppendText appends the lowercase canonical form of id to dst.
func (id ID) AppendText(dst []byte) ([]byte, error) { return id.appendTo(dst), nil }

func (id ID) appendTo(dst []byte) []byte {
	for i, c := range id.b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return dst
}

// String returns the lowercase canonical form, or "" for the zero value.
func (id ID) String() string {
	if id.IsZero() {
		return ""
	}
	var buf [36]byte
	return string(id.appendTo(buf[:0]))
}

// Hex returns the 32 lowercase hex digits without dashes, a compact form
// for tenant-derived names.
func (id ID) Hex() string {
	var buf [32]byte
	for i, c := range id.b {
		buf[2*i], buf[2*i+1] = hexDigits[c>>4], hexDigits[c&0xf]
	}
	return string(buf[:])
}

// MarshalText implements encoding.TextMarshaler; the zero value is an error.
func (id ID) MarshalText() ([]byte, error) {
	if id.IsZero() {
		return nil, fmt.Errorf("%w: cannot marshal the zero ID", ErrInvalidID)
	}
	return id.appendTo(make([]byte, 0, 36)), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}
