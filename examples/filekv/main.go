// Command filekv runs a service on filekv, a sixth backend written on the
// kit in one file (package filekv beside this one): its dry-run matrix,
// then two tenants writing through the same routes into a temporary
// directory, neither seeing the other's keys.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/examples/filekv/filekv"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

var (
	acme   = tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	globex = tenancy.MustParseID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "filekv:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	dir, err := os.MkdirTemp("", "filekv-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	module := filekv.Module("files", filekv.Dir(dir), modules.RequiredIsolation(tenancy.Tagged),
		filekv.KV("profiles", filekv.KVConfig{Keys: filekv.PerTenant("profiles")}),           // namespace
		filekv.KV("carts", filekv.KVConfig{TenantAware: true, Keys: filekv.Shared("carts")}), // tagged
	)
	rep, err := modules.DryRun(module)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "Dry-run tenancy matrix:")
	if err := rep.Matrix.WriteText(w); err != nil {
		return err
	}

	var routes struct {
		fx.In
		Profiles *filekv.Store `name:"profiles"`
		Carts    *filekv.Store `name:"carts"`
	}
	app := fx.New(fx.NopLogger, module, fx.Populate(&routes))
	if err := app.Err(); err != nil {
		return err
	}
	ctx := context.Background()
	asAcme, asGlobex := tenancy.WithTenant(ctx, acme), tenancy.WithTenant(ctx, globex)
	for _, s := range []*filekv.Store{routes.Profiles, routes.Carts} {
		if err := s.Put(asAcme, "k-1", []byte("acme's")); err != nil {
			return err
		}
	}
	for name, s := range map[string]*filekv.Store{"profiles": routes.Profiles, "carts": routes.Carts} {
		mine, _, err := s.Get(asAcme, "k-1")
		if err != nil {
			return err
		}
		_, seen, err := s.Get(asGlobex, "k-1")
		if err != nil {
			return err
		}
		keys, err := s.Keys(asGlobex)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n%s: acme reads k-1: %s; globex sees it: %v; globex lists %d keys", name, mine, seen, len(keys))
	}
	_, _, err = routes.Carts.Get(ctx, "k-1")
	fmt.Fprintf(w, "\nno tenant bound: %s\n", tenancy.CodeOf(err))
	return nil
}
