// Package migrate is tenantwire's tenant lifecycle engine: versioned
// migration sets read from an fs.FS, the check of a container's applied
// history against a set, a tenant registry, the version gate, and the
// Runner that provisions, migrates and tears down one tenant or every
// tenant with bounded concurrency. Each backend adapter supplies a Target
// (where its histories are, how a step runs); this package knows no
// backend.
package migrate

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Step is one versioned migration file: "0003_add_total.sql" is version 3,
// name "add_total", kind "sql".
type Step struct {
	Version int64
	Name    string
	// Kind is the file extension without the dot ("sql", "json").
	Kind string
	Body []byte
	// Checksum is the hex SHA-256 of Body, recorded when the step runs so
	// an edited file is refused.
	Checksum string
}

// Set is a module's migrations, ordered by version, versions unique.
type Set []Step

// Latest is the highest version of the set (0 when empty).
func (s Set) Latest() int64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1].Version
}

// Load reads every "<version>_<name>.<kind>" file at the top of fsys
// (version: decimal digits, at least 1). Other files are an error, so a
// misnamed migration is not skipped silently; so are two files sharing a
// version.
func Load(fsys fs.FS, kinds ...string) (Set, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("migrate: reading migrations: %w", err)
	}
	var set Set
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		st, err := parseName(e.Name(), kinds)
		if err != nil {
			return nil, err
		}
		if st.Body, err = fs.ReadFile(fsys, e.Name()); err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		sum := sha256.Sum256(st.Body)
		st.Checksum = hex.EncodeToString(sum[:])
		set = append(set, st)
	}
	slices.SortFunc(set, func(a, b Step) int { return cmp.Compare(a.Version, b.Version) })
	for i := 1; i < len(set); i++ {
		if set[i].Version == set[i-1].Version {
			return nil, fmt.Errorf("migrate: two migrations have version %d: %s and %s", set[i].Version, set[i-1].file(), set[i].file())
		}
	}
	return set, nil
}

func (s Step) file() string { return fmt.Sprintf("%04d_%s.%s", s.Version, s.Name, s.Kind) }

// File is the step's file name as it would be written.
func (s Step) File() string { return s.file() }

func parseName(name string, kinds []string) (Step, error) {
	ext := path.Ext(name)
	base := strings.TrimSuffix(name, ext)
	v, rest, ok := strings.Cut(base, "_")
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil || n < 1 || rest == "" || ext == "" {
		return Step{}, fmt.Errorf("migrate: %q is not named <version>_<name>.<kind> (version a positive integer)", name)
	}
	kind := ext[1:]
	if len(kinds) > 0 && !slices.Contains(kinds, kind) {
		return Step{}, fmt.Errorf("migrate: %q: kind %q is not one of %v", name, kind, kinds)
	}
	return Step{Version: n, Name: rest, Kind: kind}, nil
}

// Applied is a step a container records as run.
type Applied struct {
	Version  int64
	Name     string
	Checksum string
}

// Pending returns the steps of set not yet in applied, checking the
// history first: an applied step whose checksum differs (edited), an
// applied version missing from the set (removed), and a pending step older
// than the newest applied one (added out of order) are refused with
// tenancy.CodeMigrationHistoryConflict. where names the container.
func (s Set) Pending(applied []Applied, module, backend string, tenant tenancy.ID) (Set, error) {
	byVersion := make(map[int64]Step, len(s))
	for _, st := range s {
		byVersion[st.Version] = st
	}
	done := make(map[int64]bool, len(applied))
	var newest int64
	for _, a := range applied {
		st, ok := byVersion[a.Version]
		switch {
		case !ok:
			return nil, conflict(module, backend, tenant, fmt.Sprintf("version %d (%s) is applied but no longer in the migration set", a.Version, a.Name))
		case st.Checksum != a.Checksum:
			return nil, conflict(module, backend, tenant, fmt.Sprintf("%s was edited after it was applied (checksum %.12s, applied %.12s)", st.file(), st.Checksum, a.Checksum))
		}
		done[a.Version] = true
		newest = max(newest, a.Version)
	}
	var out Set
	for _, st := range s {
		if done[st.Version] {
			continue
		}
		if st.Version < newest {
			return nil, conflict(module, backend, tenant, fmt.Sprintf("%s is not applied, but version %d after it is (added out of order)", st.file(), newest))
		}
		out = append(out, st)
	}
	return out, nil
}

func conflict(module, backend string, tenant tenancy.ID, detail string) error {
	if !tenant.IsZero() {
		detail = "tenant " + tenant.String() + ": " + detail
	} else {
		detail = "shared tables: " + detail
	}
	return &tenancy.Error{
		Code: tenancy.CodeMigrationHistoryConflict, Module: module, Backend: backend, Detail: detail,
		Fix: "restore the applied file as it was and put the change in a new migration with a higher version",
	}
}

// behindError is the refusal of a tenant (zero: the shared tables) whose
// containers are at version have while the module's routes need version
// need.
func behindError(module, backend, route string, tenant tenancy.ID, have, need int64) error {
	who := "the shared tables are"
	if !tenant.IsZero() {
		who = "tenant " + tenant.String() + " is"
	}
	return &tenancy.Error{
		Code: tenancy.CodeTenantMigrationBehind, Module: module, Backend: backend, Route: route,
		Detail: fmt.Sprintf("%s at migration version %d; the routes need %d", who, have, need),
		Fix:    "run the module's migrations for every tenant (the service's migrate command, or MigrateAll)",
	}
}
