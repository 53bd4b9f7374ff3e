package mongo

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// appendJSON appends v as the relaxed extended JSON bson.MarshalExtJSON
// writes for it (escapeHTML off), byte for byte, for the types
// encodeValue stores: document, array, string, 32- and 64-bit integers,
// finite doubles, booleans and null. It reports false for any other type
// (or a malformed value); the caller then leaves the value to the driver.
// Reading a record is the adapter's hottest path; through the driver's
// writer it took 31 allocations, with appendJSON 7.
func appendJSON(dst []byte, v bsoncore.Value) ([]byte, bool) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		return appendContainer(dst, v.Data, v.Type == bsoncore.TypeArray)
	case bsoncore.TypeString:
		// Read in place: the driver's accessors copy the string out.
		n, rem, ok := bsoncore.ReadLength(v.Data)
		if !ok || n < 1 || int(n) > len(rem) || rem[n-1] != 0 {
			return dst, false
		}
		return appendString(dst, rem[:n-1]), true
	case bsoncore.TypeInt32:
		i, ok := v.Int32OK()
		return strconv.AppendInt(dst, int64(i), 10), ok
	case bsoncore.TypeInt64:
		i, ok := v.Int64OK()
		return strconv.AppendInt(dst, i, 10), ok
	case bsoncore.TypeDouble:
		f, ok := v.DoubleOK()
		if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
			return dst, false
		}
		return appendDouble(dst, f), true
	case bsoncore.TypeBoolean:
		b, ok := v.BooleanOK()
		return strconv.AppendBool(dst, b), ok
	case bsoncore.TypeNull:
		return append(dst, "null"...), true
	}
	return dst, false
}

// appendContainer writes a document as an object, an array as an array
// (BSON arrays are documents keyed "0", "1", ...; the keys are dropped).
func appendContainer(dst, doc []byte, array bool) ([]byte, bool) {
	open, closing := byte('{'), byte('}')
	if array {
		open, closing = '[', ']'
	}
	length, rem, ok := bsoncore.ReadLength(doc)
	if !ok || int(length) != len(doc) || length < 5 {
		return dst, false
	}
	rem = rem[:len(rem)-1] // the trailing NUL
	dst = append(dst, open)
	for first := true; len(rem) > 0; first = false {
		var el bsoncore.Element
		el, rem, ok = bsoncore.ReadElement(rem)
		if !ok {
			return dst, false
		}
		if !first {
			dst = append(dst, ',')
		}
		if !array {
			dst = appendString(dst, el.KeyBytes())
			dst = append(dst, ':')
		}
		if dst, ok = appendJSON(dst, el.Value()); !ok {
			return dst, false
		}
	}
	return append(dst, closing), true
}

// appendDouble prints a finite double as the driver does: the shortest
// form that round-trips, with ".0" on integral values.
func appendDouble(dst []byte, f float64) []byte {
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'G', -1, 64)
	if !bytes.ContainsAny(dst[start:], "E.") {
		dst = append(dst, ".0"...)
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendString quotes s with the driver's escapes: '"', '\\' and control
// characters escaped, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped,
// everything else as is.
func appendString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRune(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"')
}
