package tenantadmin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenantadmin"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// The operator surface in an app: its endpoints answer on the operator
// listener only, and Run sends an app's main's subcommands there.
func ExampleModule() {
	reg := migrate.NewMemoryRegistry()
	var srv *tenanthttp.Server
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		memory.Module("shop", memory.CacheRoute("carts", memory.CacheConfig{Keys: naming.PerTenant("carts")})),
		tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true}),
		tenantadmin.Module(tenantadmin.Config{Registry: reg}),
		fx.Populate(&srv))
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = app.Stop(ctx) }()
	const acme = "7c9e6679-7425-40de-944b-e07fc1f90ae7"

	post := func(base, path string) {
		// A POST to the operator surface goes as application/json, which
		// no HTML form or simple cross-site request can send.
		resp, err := http.Post("http://"+base+path, "application/json", nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Printf("%d %s", resp.StatusCode, body)
	}
	post(srv.OperatorAddr(), "/tenants/"+acme+"/suspend")
	post(srv.OperatorAddr(), "/tenants/acme/resume")
	post(srv.OperatorAddr(), "/tenants/"+acme+"/offboard")
	post(srv.TenantAddr(), "/tenants/"+acme+"/resume")

	// In main: os.Exit(tenantadmin.ExitCode(tenantadmin.Run(ctx, addr, os.Args[2:], os.Stdout))).
	err := tenantadmin.Run(ctx, srv.OperatorAddr(), []string{"status", acme}, os.Stdout)
	fmt.Println("exit", tenantadmin.ExitCode(err))
	// Output:
	// 200 {"tenant":"7c9e6679-7425-40de-944b-e07fc1f90ae7","step":"suspend","ok":true,"suspended":true}
	// 400 {"error":"\"acme\" is not a tenant id (tenancy: invalid tenant ID (must be a canonical 8-4-4-4-12 hex UUID))","code":"tenant_id_invalid","fix":"name the tenant by its canonical 8-4-4-4-12 hex UUID, as GET /tenants lists it"}
	// 400 {"error":"offboarding removes tenant 7c9e6679-7425-40de-944b-e07fc1f90ae7's data and needs that id repeated once as confirm; nothing was changed","code":"offboard_unconfirmed","fix":"add confirm=7c9e6679-7425-40de-944b-e07fc1f90ae7 (or run it with dry_run=1 first to see what would run)"}
	// 404 404 page not found
	// {"id":"7c9e6679-7425-40de-944b-e07fc1f90ae7","registered":false,"suspended":true,"modules":[{"module":"shop","backend":"memory","provision":false,"offboard":true}]}
	// exit 0
}
