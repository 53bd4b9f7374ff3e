package migrate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxArchiveLine bounds one line of an archive (one record), so a
// malformed input cannot make the reader hold an unbounded line.
const maxArchiveLine = 64 << 20

// ReadArchive reads a whole archive from r, copying each record line to
// spool, and checks it: the header, every line's form, and every
// section's count and sha256 against the manifest. It returns the
// manifest only when all of it holds; spool then holds the records that
// Records reads back. It never holds more than one line in memory.
func ReadArchive(r io.Reader, spool io.Writer) (ArchiveHeader, Manifest, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var h ArchiveHeader
	first, err := readLine(br)
	if err != nil {
		return h, Manifest{}, ArchiveInvalid("no header line: " + err.Error())
	}
	var l archiveLine
	if err := strict(first, &l); err != nil || l.Format != ArchiveFormat || l.Module != "" || l.Route != "" || l.Manifest != nil {
		return h, Manifest{}, ArchiveInvalid(fmt.Sprintf("the first line is not a %s header", ArchiveFormat))
	}
	if l.Version != ArchiveVersion {
		return h, Manifest{}, ArchiveInvalid(fmt.Sprintf("archive format version %d; this build reads version %d", l.Version, ArchiveVersion))
	}
	h = l.ArchiveHeader
	var sec sectioner
	sw := bufio.NewWriterSize(spool, 64<<10)
	var buf []byte // each line's, reused: nothing of a record outlives its line here
	var prev Record
	for n := 2; ; n++ {
		line, err := readLineInto(br, buf)
		buf = line
		if err != nil {
			return h, Manifest{}, ArchiveInvalid(fmt.Sprintf("line %d: %v (no manifest: the archive was cut short)", n, err))
		}
		var l archiveLine
		if rec, ok := plainRecord(line, &prev); ok {
			l.Record, prev = rec, rec
		} else if err := strict(line, &l); err != nil {
			return h, Manifest{}, ArchiveInvalid(fmt.Sprintf("line %d: %v", n, err))
		}
		if l.Manifest != nil {
			if _, err := br.Peek(1); err != io.EOF {
				return h, Manifest{}, ArchiveInvalid(fmt.Sprintf("line %d: data after the manifest", n))
			}
			sec.close()
			if err := checkSections(sec.done, l.Manifest.Sections); err != nil {
				return h, Manifest{}, err
			}
			return h, *l.Manifest, sw.Flush()
		}
		rec := l.Record
		if rec.Module == "" || rec.Route == "" || rec.Kind == "" {
			return h, Manifest{}, ArchiveInvalid(fmt.Sprintf("line %d: a record needs a module, a route and a kind", n))
		}
		if l.ArchiveHeader != (ArchiveHeader{}) {
			return h, Manifest{}, ArchiveInvalid(fmt.Sprintf("line %d: a record carries a header's fields (format, version, tenant, created): records name no tenant", n))
		}
		if err := sec.add(rec, line); err != nil {
			return h, Manifest{}, ArchiveInvalid(fmt.Sprintf("line %d: %v", n, err))
		}
		_, _ = sw.Write(line) // a bufio.Writer's error sticks: WriteByte returns it
		if err := sw.WriteByte('\n'); err != nil {
			return h, Manifest{}, err
		}
	}
}

// checkSections compares the sections read with the manifest's.
func checkSections(got, want []ArchiveSection) error {
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(want):
			return ArchiveMismatch(got[i].Module, "", got[i].Route, fmt.Sprintf("the manifest does not list the records of family %q", got[i].Family), "import an unaltered archive")
		case i >= len(got):
			if want[i].Records == 0 {
				continue
			}
			return ArchiveMismatch(want[i].Module, "", want[i].Route, fmt.Sprintf("the manifest lists %d records of family %q; the archive has none", want[i].Records, want[i].Family), "import an unaltered archive")
		}
		g, w := got[i], want[i]
		if g.Module != w.Module || g.Route != w.Route || g.Family != w.Family {
			return ArchiveMismatch(g.Module, "", g.Route, fmt.Sprintf("section %d is family %q of route %q; the manifest lists family %q of route %q of module %q", i+1, g.Family, g.Route, w.Family, w.Route, w.Module), "import an unaltered archive")
		}
		if g.Records != w.Records || g.SHA256 != w.SHA256 {
			return ArchiveMismatch(g.Module, "", g.Route, fmt.Sprintf("family %q: %d records of sha256 %s; the manifest says %d of %s (the archive was altered)", g.Family, g.Records, g.SHA256, w.Records, w.SHA256), "import an unaltered archive")
		}
	}
	return nil
}

func readLine(br *bufio.Reader) ([]byte, error) { return readLineInto(br, nil) }

// readLineInto reads a line into buf's memory, when it fits.
func readLineInto(br *bufio.Reader, buf []byte) ([]byte, error) {
	line := buf[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxArchiveLine {
			return nil, fmt.Errorf("a line longer than %d bytes", maxArchiveLine)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(line) == 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, errors.New("the last line has no newline")
		default:
			return nil, err
		}
	}
}

func strict(line []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one value on the line")
	}
	return nil
}

// Records reads back the records ReadArchive spooled, module by module.
type Records struct {
	br   *bufio.Reader
	m    Manifest
	next *Record
	last *Record // the record read last, whose names the next one shares as a rule
	err  error
}

// NewRecords reads the spool of a checked archive of manifest m.
func NewRecords(spool io.Reader, m Manifest) *Records {
	return &Records{br: bufio.NewReaderSize(spool, 64<<10), m: m}
}

func (rs *Records) peek() (*Record, error) {
	if rs.next != nil || rs.err != nil {
		return rs.next, rs.err
	}
	line, err := readLine(rs.br)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nil
	}
	if err != nil {
		rs.err = err
		return nil, err
	}
	var prev Record
	if rs.last != nil {
		prev = *rs.last
	}
	r, ok := plainRecord(line, &prev)
	if !ok {
		if rs.err = json.Unmarshal(line, &r); rs.err != nil {
			return nil, rs.err
		}
	}
	rs.next, rs.last = &r, &r
	return rs.next, nil
}

// Module returns the records of module, which must come next (an
// ArchiveIn); a module with none yields none.
func (rs *Records) Module(module string) ArchiveIn { return moduleIn{rs, module} }

type moduleIn struct {
	rs     *Records
	module string
}

func (m moduleIn) Sections() []ArchiveSection {
	var out []ArchiveSection
	for _, s := range m.rs.m.Sections {
		if s.Module == m.module {
			out = append(out, s)
		}
	}
	return out
}

func (m moduleIn) Version() int64 {
	for _, am := range m.rs.m.Modules {
		if am.Module == m.module {
			return am.Version
		}
	}
	return 0
}

func (m moduleIn) Next() (Record, bool, error) {
	r, err := m.rs.peek()
	if err != nil || r == nil || r.Module != m.module {
		return Record{}, false, err
	}
	m.rs.next = nil
	return *r, true, nil
}

// plainRecord reads line when it is a record in the form the writer
// writes by hand (ArchiveWriter.line): the fields in its order, names
// of printable ASCII without escapes, a value that is valid JSON and not
// null. It returns what the strict decoder would, without its cost
// (most of an import's client time); false sends any other line to the
// decoder. A name equal to prev's is prev's string (a section's records
// share them), not a new one. The value is validated even when the line
// was checked before: that is what tells a value from a value followed
// by more fields (a record with meta).
func plainRecord(line []byte, prev *Record) (Record, bool) {
	var r Record
	rest, ok := bytes.CutPrefix(line, []byte(`{"module":`))
	if !ok {
		return r, false
	}
	if r.Module, rest, ok = plainString(rest, prev.Module); !ok {
		return r, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"route":`)); !ok {
		return r, false
	}
	if r.Route, rest, ok = plainString(rest, prev.Route); !ok {
		return r, false
	}
	if after, found := bytes.CutPrefix(rest, []byte(`,"family":`)); found {
		if r.Family, rest, ok = plainString(after, prev.Family); !ok {
			return r, false
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"kind":`)); !ok {
		return r, false
	}
	if r.Kind, rest, ok = plainString(rest, prev.Kind); !ok {
		return r, false
	}
	if after, found := bytes.CutPrefix(rest, []byte(`,"key":`)); found {
		if r.Key, rest, ok = plainString(after, ""); !ok {
			return r, false
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"value":`)); !ok {
		return r, false
	}
	v, ok := bytes.CutSuffix(rest, []byte("}"))
	if !ok || len(v) == 0 || isJSONSpace(v[0]) || isJSONSpace(v[len(v)-1]) || v[0] == 'n' || !json.Valid(v) {
		return r, false
	}
	r.Value = json.RawMessage(v)
	return r, true
}

// plainString reads a JSON string of printable ASCII without escapes
// (which decodes to itself) at the start of b; same, when equal.
func plainString(b []byte, same string) (string, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			if string(b[1:i]) == same {
				return same, b[i+1:], true
			}
			return string(b[1:i]), b[i+1:], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return "", nil, false
		}
	}
	return "", nil, false
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
