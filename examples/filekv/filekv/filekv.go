// Package filekv is a complete tenantwire backend in one file: a key-value
// store kept in a directory, a file per key, that needs no server. It
// shows what a backend supplies on the kit (modules.Assemble) and nothing
// more: its rules, how a route is declared, how a tenant's container is
// named, and one entry every call goes through (the kit's modules.Gate,
// which also refuses a suspended tenant and records telemetry). Shared keys with a tenant
// marker reach tagged; a directory per tenant reaches namespace; there are
// no per-tenant connections, so namespace is its ceiling.
package filekv

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Rules is what the backend can reach, read by enforcement, the matrix and
// the conformance kit alike. A function, so no caller can change them.
func Rules() floors.Backend {
	return floors.Backend{
		Name:    "filekv",
		Ceiling: tenancy.Namespace,
		Kinds: map[floors.Kind]floors.KindRule{
			"kv": {Summary: "key-value store, a file per key", Relations: []string{"keys"}},
		},
	}
}

// Container names the directory a route's keys live in: one shared by
// every tenant, or one per tenant.
type Container struct {
	base      string
	perTenant bool
}

// Shared is one directory for every tenant.
func Shared(name string) Container { return Container{base: name} }

// PerTenant is a directory per tenant, "<base>.<tenant hex>". A base holds
// no dot, so no tenant's directory is another's or a shared one.
func PerTenant(base string) Container { return Container{base: base, perTenant: true} }

func (c Container) problems() []tenancy.Problem {
	valid := c.base != ""
	for _, r := range c.base {
		valid = valid && (r == '_' || r == '-' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}
	if !valid {
		return []tenancy.Problem{{Detail: fmt.Sprintf("directory name %q is empty or holds a character other than a-z, 0-9, '-' and '_'", c.base),
			Fix: "name the directory in lower-case letters, digits, '-' and '_'"}}
	}
	return nil
}

// config embeds the kit's Settings: modules.RequiredIsolation, the one
// shared option filekv takes, sets its Floor.
type config struct {
	modules.Settings
	dir     string
	sources int
	routes  []modules.RouteSpec
}

// Option configures a module: Dir, KV, or the kit's shared
// modules.RequiredIsolation.
type Option = modules.Option

// Dir is where the module keeps its directories: its connection source.
func Dir(path string) Option {
	return modules.Own(func(c *config) { c.dir, c.sources = path, c.sources+1 })
}

// KVConfig wires a key-value route: TenantAware marks every key with its
// tenant (tagged); a PerTenant container separates them (namespace).
type KVConfig struct {
	TenantAware bool
	Keys        Container
}

// KV adds a key-value route, provided to the app as *Store name:"<route>".
func KV(route string, cfg KVConfig) Option {
	return modules.Own(func(c *config) {
		r := floors.Route{Name: route, Kind: "kv", TenantAware: cfg.TenantAware,
			Relations: []floors.Relation{{Role: "keys", Name: cfg.Keys.base, PerTenant: cfg.Keys.perTenant}}}
		newStore := func(root *root) *Store {
			return &Store{root: root, keys: cfg.Keys, gate: modules.NewGate(root.in, Rules(), root.module, r)}
		}
		c.routes = append(c.routes, modules.RouteSpec{
			Route: r, Problems: cfg.Keys.problems(),
			Provide:  fx.Provide(fx.Annotate(newStore, fx.ResultTags(`name:"`+route+`"`))),
			Provided: []modules.Provided{{Type: typeOfStore, Name: route}},
		})
	})
}

// Module is a filekv module: its wiring is checked during fx.New with
// every other module's, and its routes are provided only when it passes.
func Module(name string, opts ...Option) fx.Option {
	c := &config{}
	errs := modules.Configure(Rules(), name, c, modules.Takes{}, opts)
	return modules.Assemble(modules.Spec{
		Name: name, Rules: Rules(), Floor: c.Floor, Routes: c.routes, Problems: errs,
		Sources: c.sources, SourceFix: "pass filekv.Dir(path) once",
		Parts: []fx.Option{fx.Provide(fx.Private, func(in modules.LifecycleIn) *root { return &root{dir: c.dir, module: name, in: in} })},
	})
}

// root is the module's directory and what it took from the app: the
// suspended set and the telemetry its routes' gates use.
type root struct {
	dir, module string
	in          modules.LifecycleIn
}

// Store is a key-value route.
type Store struct {
	root *root
	keys Container
	// gate is the kit's entry of every call: the rules' decision, the
	// bound tenant or tenant_unbound, tenant_suspended with the call held
	// in flight until its end (so an Offboard waits for it), telemetry.
	gate *modules.Gate
}

// where is the one entry of every call: the gate's tenant (or its
// refusal), the directory and the file of key; end ends the call. Keys
// are hex-encoded, so a key can name no path; a tagged key starts with
// its tenant.
func (s *Store) where(ctx context.Context, key string) (dir, file, tag string, end func(error), err error) {
	_, id, end, err := s.gate.Enter(ctx)
	if err != nil {
		return "", "", "", nil, err
	}
	d := s.gate.Decision
	dir = s.keys.base
	if d.NeedsTenant && d.ResolvesPerTenant("keys") {
		dir += "." + id.Hex()
	}
	if d.NeedsTenant && d.Tagged {
		tag = id.Hex() + "."
	}
	return filepath.Join(s.root.dir, dir), tag + hex.EncodeToString([]byte(key)), tag, end, nil
}

// Put stores value under key, replacing it whole.
func (s *Store) Put(ctx context.Context, key string, value []byte) (err error) {
	dir, file, _, end, err := s.where(ctx, key)
	if err != nil {
		return err
	}
	defer func() { end(err) }()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".put-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename; left by a failure
	if _, err := tmp.Write(value); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, file))
}

// Get returns key's value and whether it is there.
func (s *Store) Get(ctx context.Context, key string) (_ []byte, _ bool, err error) {
	dir, file, _, end, err := s.where(ctx, key)
	if err != nil {
		return nil, false, err
	}
	defer func() { end(err) }()
	v, err := os.ReadFile(filepath.Join(dir, file))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return v, err == nil, err
}

// Delete removes key and reports whether it was there.
func (s *Store) Delete(ctx context.Context, key string) (_ bool, err error) {
	dir, file, _, end, err := s.where(ctx, key)
	if err != nil {
		return false, err
	}
	defer func() { end(err) }()
	err = os.Remove(filepath.Join(dir, file))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Keys lists the keys the bound tenant sees.
func (s *Store) Keys(ctx context.Context) (_ []string, err error) {
	dir, _, tag, end, err := s.where(ctx, "")
	if err != nil {
		return nil, err
	}
	defer func() { end(err) }()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), tag)
		if !ok || strings.HasPrefix(e.Name(), ".") || (tag == "" && strings.Contains(name, ".")) {
			continue // another tenant's key, a temporary file
		}
		if k, err := hex.DecodeString(name); err == nil {
			keys = append(keys, string(k))
		}
	}
	return keys, nil
}

var typeOfStore = reflect.TypeFor[*Store]()
