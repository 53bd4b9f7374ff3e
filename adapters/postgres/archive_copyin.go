package postgres

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// copyInType reports whether COPY FROM's text input of a column of the
// built-in type oid is what jsonb_populate_recordset made of its archived
// JSON value: a JSON string's text, a number's or a boolean's spelling,
// jsonb's JSON as it is. json is not (the recordset goes through jsonb,
// which reorders its keys), nor are arrays, composites, domains or enums
// (their JSON is not their text): a table with one of those is imported
// through jsonb_populate_recordset still.
func copyInType(oid int64) bool {
	switch oid {
	case 25, 1043, 1042, 19, 2950, 17, // text, varchar, bpchar, name, uuid, bytea
		20, 21, 23, 16, 3802, // int8, int2, int4, bool, jsonb
		1184, 1114, 1082, 1700, 700, 701: // timestamptz, timestamp, date, numeric, float4, float8
		return true
	}
	return false
}

// copyIn is how tb's rows of an archive go into tb with COPY FROM: the
// columns it names, in order, and which archived key fills each.
type copyIn struct {
	sql    string
	tenant int            // the tenant column's index in the row, or -1
	fill   map[string]int // an archived key -> its column's index
	jsonb  []bool         // by index: the value's JSON is the column's text
	n      int
}

// copyInOf is tb's COPY FROM, false when a column's type
// needs jsonb_populate_recordset (copyInType).
func (tb pgTable) copyInOf() (copyIn, bool) {
	ci := copyIn{tenant: -1, fill: map[string]int{}}
	var into []string
	for _, c := range tb.cols {
		switch {
		case c.name == "tenant_id":
			ci.tenant = len(into)
		case c.serial && !tb.perTenant:
			continue // the table's next value: another tenant's row holds the archived one
		case !copyInType(c.typ):
			return copyIn{}, false
		default:
			ci.fill[c.name] = len(into)
		}
		into = append(into, pgx.Identifier{c.name}.Sanitize())
		ci.jsonb = append(ci.jsonb, c.typ == 3802)
	}
	ci.n = len(into)
	// COPY writes an identity column's given values, ALWAYS or not, as
	// the INSERT's OVERRIDING SYSTEM VALUE does.
	ci.sql = "COPY " + tb.q + " (" + strings.Join(into, ", ") + ") FROM STDIN"
	return ci, true
}

// copyInRows is the reader COPY FROM reads tb's rows from: it takes the
// records of in while they are rows of tb, each turned into a line of
// COPY's text format, and stops before the first that is not, kept in
// next for the caller.
type copyInRows struct {
	module string
	ci     copyIn
	tb     pgTable
	tenant []byte
	in     migrate.ArchiveIn
	next   *migrate.Record // the record that ended the section
	done   bool
	err    error // the archive's error or the record's refusal
	buf    []byte
	off    int
	vals   [][]byte
	// mu: pgconn reads in a goroutine of its own, which a broken
	// connection's CopyFrom returns without waiting for.
	mu sync.Mutex
}

// result is the record that ended the section, and the error that did.
func (r *copyInRows) result() (*migrate.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next, r.err
}

func newCopyInRows(module string, tb pgTable, ci copyIn, tenant tenancy.ID, in migrate.ArchiveIn, first migrate.Record) (*copyInRows, error) {
	r := &copyInRows{module: module, ci: ci, tb: tb, tenant: []byte(tenant.String()), in: in, vals: make([][]byte, ci.n)}
	return r, r.add(first)
}

func (r *copyInRows) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.off == len(r.buf) {
		if r.done {
			return 0, errorsOr(r.err)
		}
		r.buf, r.off = r.buf[:0], 0
		for len(r.buf) < 32<<10 && !r.done {
			rec, ok, err := r.in.Next()
			switch {
			case err != nil:
				r.err, r.done = err, true
			case !ok:
				r.done = true
			case rec.Route != r.tb.route || rec.Family != r.tb.family || rec.Kind != "row" || !json.Valid(rec.Value):
				r.next, r.done = &rec, true
			default:
				if err := r.add(rec); err != nil {
					r.err, r.done = err, true
				}
			}
		}
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// errorsOr is err, or io.EOF.
func errorsOr(err error) error {
	if err != nil {
		return err
	}
	return io.EOF
}

// add appends rec's line: its values by column, the tenant's id in the
// tenant column, \N for a key the record does not have (NULL, as the
// recordset gives).
func (r *copyInRows) add(rec migrate.Record) error {
	for i := range r.vals {
		r.vals[i] = nil
	}
	b := bytes.TrimSpace(rec.Value)
	if len(b) == 0 || b[0] != '{' {
		return r.refuse("a row that is not a JSON object")
	}
	for i := 1; ; {
		i = skipSpace(b, i)
		if b[i] == '}' {
			break
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		end := skipValue(b, i)
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var s string
			if err := json.Unmarshal(b[i:end], &s); err != nil {
				return r.refuse("a column name that is not a JSON string")
			}
			key = []byte(s)
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // ':'
		end = skipValue(b, i)
		if col, ok := r.ci.fill[string(key)]; ok {
			r.vals[col] = b[i:end] // the last of a repeated key, as jsonb keeps
		}
		i = end
	}
	for col := range r.vals {
		if col > 0 {
			r.buf = append(r.buf, '\t')
		}
		v := r.vals[col]
		switch {
		case col == r.ci.tenant:
			r.buf = append(r.buf, r.tenant...)
		case v == nil || string(v) == "null":
			r.buf = append(r.buf, '\\', 'N')
		case r.ci.jsonb[col]:
			r.buf = appendCopyEscaped(r.buf, v)
		case v[0] == '"':
			var err error
			if r.buf, err = appendJSONStringAsCopy(r.buf, v); err != nil {
				return r.refuse(err.Error())
			}
		case v[0] == '{' || v[0] == '[':
			return r.refuse("a JSON object or array for a column that is not jsonb")
		default: // a number, true or false: its spelling
			r.buf = append(r.buf, v...)
		}
	}
	r.buf = append(r.buf, '\n')
	return nil
}

func (r *copyInRows) refuse(detail string) error {
	return migrate.ArchiveMismatch(r.module, rules.Name, r.tb.route, fmt.Sprintf("a row of %q: %s", r.tb.family, detail),
		"import an unaltered archive into an app with the archive's routes at its migration version")
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue is the end of the JSON value at b[i] of a valid document.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		for j := i + 1; ; j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
	case '{', '[':
		depth := 0
		for j := i; ; j++ {
			switch b[j] {
			case '"':
				j = skipValue(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j
}

// appendCopyEscaped appends s with COPY text's escapes: the backslash and
// the bytes that end a field or a row.
func appendCopyEscaped(dst, s []byte) []byte {
	for _, c := range s {
		dst = appendCopyByte(dst, c)
	}
	return dst
}

func appendCopyByte(dst []byte, c byte) []byte {
	switch c {
	case '\\':
		return append(dst, '\\', '\\')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, c)
}

// appendJSONStringAsCopy appends the text of the valid JSON string q,
// COPY-escaped.
func appendJSONStringAsCopy(dst, q []byte) ([]byte, error) {
	s := q[1 : len(q)-1]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = appendCopyByte(dst, c)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\\', 'n')
		case 'r':
			dst = append(dst, '\\', 'r')
		case 't':
			dst = append(dst, '\\', 't')
		case 'u':
			r, n := jsonRune(s[i+1:])
			switch r {
			case 0: // as jsonb refuses it: no text holds a NUL
				return dst, errors.New(`\u0000 in a string`)
			case utf8.RuneError:
				return dst, errors.New("a lone UTF-16 surrogate in a string")
			}
			var u [utf8.UTFMax]byte
			dst = append(dst, u[:utf8.EncodeRune(u[:], r)]...)
			i += n
		default: // " \ /
			dst = appendCopyByte(dst, s[i])
		}
	}
	return dst, nil
}

// jsonRune decodes the hex of a \u escape at s (a surrogate pair's both
// halves), and how many bytes of s it took; utf8.RuneError for a lone
// surrogate.
func jsonRune(s []byte) (rune, int) {
	h, _ := strconv.ParseUint(string(s[:4]), 16, 16)
	r := rune(h)
	if utf16.IsSurrogate(r) && len(s) >= 10 && s[4] == '\\' && s[5] == 'u' {
		if l, err := strconv.ParseUint(string(s[6:10]), 16, 16); err == nil {
			if d := utf16.DecodeRune(r, rune(l)); d != utf8.RuneError {
				return d, 10
			}
		}
	}
	if utf16.IsSurrogate(r) {
		return utf8.RuneError, 4
	}
	return r, 4
}
