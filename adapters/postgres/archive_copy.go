package postgres

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// copyKind is how the export turns a column's COPY text into the JSON
// row_to_json gives for it. The archive's records are row_to_json's, so
// existing archives and their hashes hold; building them in the client
// from COPY's text spares the server the JSON rendering of every row,
// which cost about as much as COPY itself.
type copyKind uint8

const (
	// copyToJSON: the server renders the value with to_json (what
	// row_to_json does per column), and the client pastes it. Every type
	// but those below: dates and times (their JSON spelling depends on
	// the session), floats and numerics (NaN and infinities are quoted),
	// arrays, composites, domains, enums, types with a cast to json.
	copyToJSON   copyKind = iota
	copyString            // the text as a JSON string
	copyNumber            // the text as it is: an integer
	copyBool              // t or f
	copyVerbatim          // json, jsonb: their text is row_to_json's
)

// copyKindOf is the kind of a column of the built-in type oid.
func copyKindOf(oid int64) copyKind {
	switch oid {
	case 25, 1043, 1042, 19, 2950, 17: // text, varchar, bpchar, name, uuid, bytea
		return copyString
	case 20, 21, 23: // int8, int2, int4
		return copyNumber
	case 16:
		return copyBool
	case 114, 3802: // json, jsonb
		return copyVerbatim
	}
	return copyToJSON
}

// copySQL is the export's COPY of tb's rows of tenant: every column but
// the tenant's, in primary-key order (stable, so two exports of the same
// rows hash the same). The tenant is a UUID literal (COPY takes no
// parameters).
func (tb pgTable) copySQL(tenant tenancy.ID) string {
	var cols []string
	for _, c := range tb.cols {
		if c.name == "tenant_id" {
			continue
		}
		col := "t." + pgx.Identifier{c.name}.Sanitize()
		if c.kind == copyToJSON {
			col = "pg_catalog.to_json(" + col + ")"
		}
		cols = append(cols, col)
	}
	q := "COPY (SELECT " + strings.Join(cols, ", ") + " FROM " + tb.q + " t"
	if tb.tenantCol {
		q += " WHERE t.tenant_id = '" + tenant.String() + "'::uuid"
	}
	q += tb.keyOrder("t.")
	return q + ") TO STDOUT"
}

// copyRows emits tb's rows of tenant as records, reading them with
// COPY ... TO STDOUT on tx (the export's snapshot), a row at a time.
func (tb pgTable) copyRows(ctx context.Context, tx pgx.Tx, tenant tenancy.ID, emit func(migrate.Record) error) error {
	w := &copyRecords{tb: tb, emit: emit}
	for _, c := range tb.cols {
		if c.name != "tenant_id" {
			w.cols = append(w.cols, c.kind)
			w.keys = append(w.keys, appendPGString(nil, c.name))
		}
	}
	_, err := tx.Conn().PgConn().CopyTo(ctx, w, tb.copySQL(tenant))
	if w.err != nil {
		// The writer's error (the archive's): the connection is closed
		// by pgconn, and the transaction with it.
		return w.err
	}
	if err == nil && len(w.part) > 0 {
		err = fmt.Errorf("a row cut short (%d bytes)", len(w.part))
	}
	if err != nil {
		return fmt.Errorf("postgres: exporting %s: %w", tb.q, err)
	}
	return nil
}

// copyRecords is the writer COPY's text goes to: it splits it into rows
// and each row into fields, and emits each row as row_to_json would
// have written it.
type copyRecords struct {
	tb   pgTable
	emit func(migrate.Record) error
	cols []copyKind
	keys [][]byte // each column's name as a JSON string
	part []byte   // a row not yet ended
	val  []byte
	err  error
}

func (w *copyRecords) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.part = append(w.part, p...)
			break
		}
		line := p[:i]
		if len(w.part) > 0 {
			w.part = append(w.part, line...)
			line = w.part
		}
		if err := w.row(line); err != nil {
			w.err = err
			return 0, err
		}
		w.part = w.part[:0]
		p = p[i+1:]
	}
	return n, nil
}

// row emits one row of COPY's text format: fields split by tabs (a tab
// in a value is escaped), \N for NULL, backslash escapes.
func (w *copyRecords) row(line []byte) error {
	v := append(w.val[:0], '{')
	for i, kind := range w.cols {
		var f []byte
		if i == len(w.cols)-1 {
			f, line = line, nil
		} else {
			j := bytes.IndexByte(line, '\t')
			if j < 0 {
				return fmt.Errorf("postgres: exporting %s: a row of %d fields, want %d", w.tb.q, i+1, len(w.cols))
			}
			f, line = line[:j], line[j+1:]
		}
		if i > 0 {
			v = append(v, ',')
		}
		v = append(v, w.keys[i]...)
		v = append(v, ':')
		switch {
		case len(f) == 2 && f[0] == '\\' && f[1] == 'N':
			v = append(v, "null"...)
		case kind == copyString:
			v = appendCopyString(v, f)
		case kind == copyBool:
			if len(f) == 1 && f[0] == 't' {
				v = append(v, "true"...)
			} else {
				v = append(v, "false"...)
			}
		default:
			v = appendCopyText(v, f)
		}
	}
	v = append(v, '}')
	w.val = v
	return w.emit(migrate.Record{Route: w.tb.route, Family: w.tb.family, Kind: "row", Value: v})
}

// copyUnescape is the byte a COPY text escape \c stands for (COPY TO
// writes only these, and the backslash itself).
func copyUnescape(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'v':
		return '\v'
	}
	return c
}

// appendCopyText appends f's text, its COPY escapes undone.
func appendCopyText(dst, f []byte) []byte {
	for {
		i := bytes.IndexByte(f, '\\')
		if i < 0 || i == len(f)-1 {
			return append(dst, f...)
		}
		dst = append(dst, f[:i]...)
		dst = append(dst, copyUnescape(f[i+1]))
		f = f[i+2:]
	}
}

// appendCopyString appends f's text, its COPY escapes undone, as a JSON
// string escaped as the server's escape_json does.
func appendCopyString(dst, f []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, f[start:i]...)
		if c == '\\' && i+1 < len(f) {
			i++
			c = copyUnescape(f[i])
		}
		dst = appendPGEscaped(dst, c)
		start = i + 1
	}
	dst = append(dst, f[start:]...)
	return append(dst, '"')
}

// appendPGString appends s as a JSON string as escape_json writes it.
func appendPGString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			dst = appendPGEscaped(dst, c)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// appendPGEscaped appends the byte c as escape_json does: the short
// escapes, \u00xx (lower-case hex) for other control bytes, any other
// byte as it is.
func appendPGEscaped(dst []byte, c byte) []byte {
	switch c {
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	case '"':
		return append(dst, '\\', '"')
	case '\\':
		return append(dst, '\\', '\\')
	}
	if c < 0x20 {
		const hex = "0123456789abcdef"
		return append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
	}
	return append(dst, c)
}
