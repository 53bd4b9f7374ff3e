// Command sqlc runs a service's own schema and sqlc-generated queries
// (package tasks: projects and tasks, a foreign key, a join, a report) on
// the PostgreSQL SQL route at namespace, for two tenants. The module's
// migrations create the tables in each tenant's schema; each call runs
// logged in as the tenant's own role, whose search path is that schema,
// so the generated code's unqualified names resolve there and nothing in
// it can reach the other tenant. Regenerate the package with
// `go run github.com/sqlc-dev/sqlc/cmd/sqlc@v1.31.1 generate` in this
// directory. It needs PostgreSQL (TENANTWIRE_PG_URL), creates uniquely
// named schemas and roles, drops them and exits.
package main

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/examples/sqlc/tasks"
	"github.com/tenantwire/tenantwire/tenancy"
)

var (
	acme   = tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	globex = tenancy.MustParseID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")
)

//go:embed db/migrations/*.sql
var files embed.FS

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sqlc example:", err)
		os.Exit(1)
	}
}

func dsn() string {
	if u := os.Getenv("TENANTWIRE_PG_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/tenantwire_test?sslmode=disable"
}

// app is the service: the module with its SQL route, and the generated
// queries over it.
type app struct {
	client *postgres.Client
	own    *postgres.SQL
	q      *tasks.Queries
	stop   func() error
}

// module wires the service's own SQL at namespace: sqlc wrote the text
// (compiled), and each tenant's calls log in as its role.
func module(prefix string, secret []byte) fx.Option {
	migrations, _ := fs.Sub(files, "db/migrations")
	return postgres.Module("shop", postgres.Connect(dsn()), postgres.SchemaPrefix(prefix), postgres.AllowTeardown(),
		postgres.RequiredIsolation(tenancy.Namespace),
		postgres.Migrations(migrations),
		postgres.SQLRoute("own", postgres.SQLConfig{Origin: tenancy.Compiled, Login: &postgres.DynamicLogin{Secret: secret}}))
}

func start(ctx context.Context) (*app, error) {
	prefix, secret := "sqlc"+hex.EncodeToString(randBytes(4))+"_", randBytes(32)
	a := &app{}
	fxa := fx.New(fx.NopLogger, module(prefix, secret), fx.Invoke(fx.Annotate(func(c *postgres.Client, own *postgres.SQL) {
		a.client, a.own, a.q = c, own, tasks.New(own)
	}, fx.ParamTags(`name:"shop"`, `name:"own"`))))
	if err := fxa.Err(); err != nil {
		return nil, err
	}
	if err := fxa.Start(ctx); err != nil {
		return nil, err
	}
	a.stop = func() error { return fxa.Stop(context.Background()) }
	return a, nil
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// run provisions two tenants, gives each its projects and tasks through
// the generated queries, prints each tenant's join and report, and tears
// both down.
func run(w io.Writer) (err error) {
	ctx := context.Background()
	a, err := start(ctx)
	if err != nil {
		return err
	}
	defer func() {
		for _, t := range []tenancy.ID{acme, globex} {
			if e := a.client.Teardown(ctx, t); err == nil {
				err = e
			}
		}
		if e := a.stop(); err == nil {
			err = e
		}
	}()
	for _, t := range []tenancy.ID{acme, globex} {
		if err := a.client.Provision(ctx, t); err != nil {
			return err
		}
	}
	work := map[tenancy.ID]map[string][]string{
		acme:   {"launch": {"write copy", "ship"}, "hiring": {"post role"}},
		globex: {"audit": {"collect logs"}},
	}
	for _, t := range []tenancy.ID{acme, globex} {
		tctx := tenancy.WithTenant(ctx, t)
		for project, titles := range work[t] {
			p, err := a.q.CreateProject(tctx, project)
			if err != nil {
				return err
			}
			for _, title := range titles {
				task, err := a.q.AddTask(tctx, tasks.AddTaskParams{ProjectID: p.ID, Title: title})
				if err != nil {
					return err
				}
				if title == "write copy" {
					if _, err := a.q.CompleteTask(tctx, task.ID); err != nil {
						return err
					}
				}
			}
		}
	}
	for _, t := range []tenancy.ID{acme, globex} {
		tctx := tenancy.WithTenant(ctx, t)
		name := map[tenancy.ID]string{acme: "acme", globex: "globex"}[t]
		list, err := a.q.ListTasks(tctx)
		if err != nil {
			return err
		}
		for _, l := range list {
			fmt.Fprintf(w, "%-6s task %-12s project %-6s done=%v\n", name, l.Title, l.Project, l.Done)
		}
		report, err := a.q.ProjectReport(tctx)
		if err != nil {
			return err
		}
		for _, r := range report {
			fmt.Fprintf(w, "%-6s report %-6s %d/%d done\n", name, r.Name, r.Done, r.Total)
		}
	}
	return nil
}
