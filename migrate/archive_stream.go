package migrate

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// ArchiveHeader is an archive's first line.
type ArchiveHeader struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Tenant  string    `json:"tenant"` // the source tenant, for the operator: no import uses it
	Created time.Time `json:"created"`
}

// Manifest is an archive's last line: what it holds and how to check it.
type Manifest struct {
	Modules  []ArchiveModule  `json:"modules"`
	Sections []ArchiveSection `json:"sections"`
	Skipped  []ArchiveSkip    `json:"skipped,omitempty"`
}

// ArchiveModule is one module of an archive.
type ArchiveModule struct {
	Module  string `json:"module"`
	Backend string `json:"backend"`
	// Version is the module's migration version.
	Version  int64  `json:"version"`
	Snapshot string `json:"snapshot,omitempty"`
}

// ArchiveSection is one (module, route, family) run of records: how many
// and the sha256 of their lines, each with its newline.
type ArchiveSection struct {
	Module  string `json:"module"`
	Route   string `json:"route"`
	Family  string `json:"family,omitempty"`
	Tier    string `json:"tier,omitempty"`
	Records int64  `json:"records"`
	SHA256  string `json:"sha256"`
}

// ArchiveSkip is a route left out of an archive, and why.
type ArchiveSkip struct {
	Module string `json:"module"`
	Route  string `json:"route"`
	Reason string `json:"reason"`
}

// archiveLine is any line of an archive: a header, a record or the
// manifest, told apart by which fields are set.
type archiveLine struct {
	ArchiveHeader
	Record
	Manifest *Manifest `json:"manifest,omitempty"`
}

// sectioner counts and hashes an archive's records section by section,
// as the writer writes them and the reader reads them.
type sectioner struct {
	done []ArchiveSection
	cur  *ArchiveSection
	h    hash.Hash
	seen map[[3]string]bool
}

// add accounts for one record line (without its newline); it fails when a
// section comes back after another one began.
func (s *sectioner) add(r Record, line []byte) error {
	if s.cur == nil || s.cur.Module != r.Module || s.cur.Route != r.Route || s.cur.Family != r.Family {
		s.close()
		k := [3]string{r.Module, r.Route, r.Family}
		if s.seen == nil {
			s.seen = map[[3]string]bool{}
		}
		if s.seen[k] {
			return fmt.Errorf("records of module %q route %q family %q are not contiguous", r.Module, r.Route, r.Family)
		}
		s.seen[k] = true
		s.cur, s.h = &ArchiveSection{Module: r.Module, Route: r.Route, Family: r.Family}, sha256.New()
	}
	s.cur.Records++
	s.h.Write(line)
	s.h.Write([]byte{'\n'})
	return nil
}

func (s *sectioner) close() {
	if s.cur != nil {
		s.cur.SHA256 = hex.EncodeToString(s.h.Sum(nil))
		s.done = append(s.done, *s.cur)
		s.cur = nil
	}
}

// ArchiveWriter writes an archive: NewArchiveWriter writes the header,
// Emit each record, Close the manifest.
type ArchiveWriter struct {
	w   *bufio.Writer
	sec sectioner
	m   Manifest
	buf bytes.Buffer
	enc *json.Encoder
	// tiers is each (module, route)'s tier as the module declared it.
	tiers map[[2]string]string
	// head and body count the header's bytes and the records'.
	head, body int64
}

// NewArchiveWriter writes the header of tenant's archive to w.
func NewArchiveWriter(w io.Writer, tenant tenancy.ID, now time.Time) (*ArchiveWriter, error) {
	a := &ArchiveWriter{w: bufio.NewWriterSize(w, 64<<10)}
	a.enc = json.NewEncoder(&a.buf)
	a.enc.SetEscapeHTML(false)
	h, err := json.Marshal(ArchiveHeader{Format: ArchiveFormat, Version: ArchiveVersion, Tenant: tenant.String(), Created: now.UTC()})
	if err != nil {
		return nil, err
	}
	_, _ = a.w.Write(h) // a bufio.Writer's error sticks: WriteByte returns it
	a.head = int64(len(h)) + 1
	return a, a.w.WriteByte('\n')
}

// Module starts module's records.
func (a *ArchiveWriter) Module(m ArchiveModule) { a.m.Modules = append(a.m.Modules, m) }

// Emit writes one record of the module started last.
func (a *ArchiveWriter) Emit(r Record) error {
	if len(a.m.Modules) == 0 {
		return errors.New("migrate: archive record before any module")
	}
	r.Module = a.m.Modules[len(a.m.Modules)-1].Module
	if r.Route == "" || r.Kind == "" {
		return fmt.Errorf("migrate: archive record of module %s without a route or kind", r.Module)
	}
	a.buf.Reset()
	if r.Native == nil && r.Meta == nil && len(r.Value) > 0 && bytes.IndexByte(r.Value, '\n') < 0 {
		// The common record (a row, a document): written by hand, its
		// value as the backend gave it (valid JSON on one line), since
		// the encoder's compaction of it cost most of an export.
		a.line(r)
	} else if err := a.enc.Encode(r); err != nil {
		return fmt.Errorf("migrate: archive record of %s/%s: %w", r.Module, r.Route, err)
	}
	line := a.buf.Bytes() // with its newline
	if err := a.sec.add(r, line[:len(line)-1]); err != nil {
		return err
	}
	a.body += int64(len(line))
	_, err := a.w.Write(line)
	return err
}

// line writes r, which has a Value only, as Encode would but for the
// value's spacing.
func (a *ArchiveWriter) line(r Record) {
	b := &a.buf
	b.WriteString(`{"module":`)
	a.str(r.Module)
	b.WriteString(`,"route":`)
	a.str(r.Route)
	if r.Family != "" {
		b.WriteString(`,"family":`)
		a.str(r.Family)
	}
	b.WriteString(`,"kind":`)
	a.str(r.Kind)
	if r.Key != "" {
		b.WriteString(`,"key":`)
		a.str(r.Key)
	}
	b.WriteString(`,"value":`)
	b.Write(r.Value)
	b.WriteString("}\n")
}

// str writes s as a JSON string: names are plain ASCII as a rule, and
// anything else goes through the encoder.
func (a *ArchiveWriter) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			a.buf.Write(q)
			return
		}
	}
	a.buf.WriteByte('"')
	a.buf.WriteString(s)
	a.buf.WriteByte('"')
}

// Skip says module's route is left out.
func (a *ArchiveWriter) Skip(route, reason string) {
	a.m.Skipped = append(a.m.Skipped, ArchiveSkip{Module: a.m.Modules[len(a.m.Modules)-1].Module, Route: route, Reason: reason})
}

// Tier records the tier of the current module's route for the manifest.
func (a *ArchiveWriter) Tier(route string, t tenancy.Tier) {
	m := a.m.Modules[len(a.m.Modules)-1].Module
	if a.tiers == nil {
		a.tiers = map[[2]string]string{}
	}
	a.tiers[[2]string{m, route}] = t.String()
}

// Snapshot records how consistent the current module's records are.
func (a *ArchiveWriter) Snapshot(how string) { a.m.Modules[len(a.m.Modules)-1].Snapshot = how }

// Manifest is what the archive's manifest says once Close wrote it.
func (a *ArchiveWriter) Manifest() Manifest { return a.m }

// Records is where the archive's records lie in what it wrote: their
// offset (after the header) and length (before the manifest). A reader
// of those bytes is what NewRecords reads, with Manifest: the records of
// an archive this process just wrote, read back without checking it
// whole again.
func (a *ArchiveWriter) Records() (offset, length int64) { return a.head, a.body }

// Close writes the manifest and flushes.
func (a *ArchiveWriter) Close() error {
	a.sec.close()
	a.m.Sections = a.sec.done
	for i, s := range a.m.Sections {
		a.m.Sections[i].Tier = a.tiers[[2]string{s.Module, s.Route}]
	}
	if a.m.Sections == nil {
		a.m.Sections = []ArchiveSection{}
	}
	b, err := json.Marshal(struct {
		Manifest *Manifest `json:"manifest"`
	}{&a.m})
	if err != nil {
		return err
	}
	// A bufio.Writer's error sticks: Flush returns it.
	_, _ = a.w.Write(b)
	_ = a.w.WriteByte('\n')
	return a.w.Flush()
}
