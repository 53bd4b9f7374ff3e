package migrate

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Versioning is a module's Migrations, RequiredVersion and TenantRegistry
// options. Every backend adapter's config embeds it and its options set
// it; the rules over the three are written here once, and a backend
// supplies only how it reads a tenant's applied version and what its
// steps hold.
type Versioning struct {
	// Files is the Migrations option's fs.FS (nil: no migrations).
	Files fs.FS
	// Required is the version the module's routes need (0: no check).
	Required int64
	// Registry records the module's tenants and their versions (nil: none).
	Registry Registry
}

// Load reads the Migrations files of the given kind (none without
// Files); a misnamed file or a repeated version is the problem returned.
func (v Versioning) Load(kind string) (Set, []tenancy.Problem) {
	if v.Files == nil {
		return nil, nil
	}
	set, err := Load(v.Files, kind)
	if err != nil {
		return nil, []tenancy.Problem{{Detail: err.Error(), Fix: "name each migration <version>_<name>." + kind + " at the top of the fs.FS (version a positive integer), versions unique"}}
	}
	return set, nil
}

// Problems checks Required against latest, the newest version of the
// module's migrations, and, when the module's tenants have containers of
// their own (perTenant), that the start-up check has a Registry to read.
func (v Versioning) Problems(latest int64, perTenant bool) []tenancy.Problem {
	var out []tenancy.Problem
	if v.Required > latest {
		out = append(out, tenancy.Problem{Detail: fmt.Sprintf("RequiredVersion %d is above the newest migration (%d)", v.Required, latest),
			Fix: "add the migration (modules.Migrations) or lower RequiredVersion"})
	}
	if v.Required > 0 && perTenant && v.Registry == nil {
		out = append(out, tenancy.Problem{Detail: "RequiredVersion needs to know the module's tenants at start",
			Fix: "pass modules.TenantRegistry (postgres.NewRegistry keeps it in a table)"})
	}
	return out
}

// Start is the module's start-up check through its gate g (nil: nothing
// required): shared (nil: the module has no container every tenant
// shares) reads the shared container's version through g, then, when the
// tenants have containers of their own (perTenant), every tenant the
// Registry lists must record Required.
func (v Versioning) Start(ctx context.Context, g *Gate, perTenant bool, shared func(context.Context) error) error {
	if g == nil {
		return nil
	}
	if shared != nil {
		if err := shared(ctx); err != nil {
			return err
		}
	}
	if !perTenant || v.Registry == nil {
		// A per-tenant module without a registry was refused at fx.New.
		return nil
	}
	return g.CheckRegistry(ctx, v.Registry)
}
