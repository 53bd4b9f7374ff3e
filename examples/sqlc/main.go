// Command sqlc runs a service's own schema and sqlc-generated queries
// (package tasks: projects and tasks, a foreign key, a join, a report) on
// the PostgreSQL SQL route: at namespace for two tenants, and at
// dedicated for a third. At namespace the module's migrations create the
// tables in each tenant's schema, and each call runs logged in as the
// tenant's own role, whose search path is that schema, so the generated
// code's unqualified names resolve there and nothing in it can reach the
// other tenant. At dedicated a second module of the same queries runs
// each call in the tenant's own database, as its own user. Regenerate the
// package with `go run github.com/sqlc-dev/sqlc/cmd/sqlc@v1.31.1 generate`
// in this directory. It needs PostgreSQL (TENANTWIRE_PG_URL) as a user
// that may create roles and databases, creates uniquely named schemas,
// roles and a database, drops them and exits.
package main

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"slices"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/examples/sqlc/tasks"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

var (
	acme   = tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	globex = tenancy.MustParseID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")
	// initech is at dedicated: a database of its own.
	initech = tenancy.MustParseID("a8098c1a-f86e-41da-b2e6-0a0a0a0a0a0a")
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

// shop is one module of the service: its client, and the generated
// queries over its SQL route.
type shop struct {
	client *postgres.Client
	q      *tasks.Queries
}

// app is the service: the same queries at two tiers, each its own module.
type app struct {
	namespace, dedicated shop
	// placed are the tenants of the dedicated module; every other tenant
	// is the namespace module's.
	placed map[tenancy.ID]bool
	stop   func() error
}

// of is the module that serves tenant.
func (a *app) of(tenant tenancy.ID) shop {
	if a.placed[tenant] {
		return a.dedicated
	}
	return a.namespace
}

func migrations() fs.FS {
	m, _ := fs.Sub(files, "db/migrations")
	return m
}

// module wires the service's own SQL at namespace: sqlc wrote the text
// (compiled), and each tenant's calls log in as its role.
func module(prefix string, secret []byte) fx.Option {
	return postgres.Module("shop", postgres.Connect(dsn()), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		modules.RequiredIsolation(tenancy.Namespace),
		modules.Migrations(migrations()),
		postgres.SQLRoute("own", postgres.SQLConfig{Origin: tenancy.Compiled, Login: &postgres.DynamicLogin{Secret: secret}}))
}

// dedicatedModule wires the same queries at dedicated: each tenant's calls
// run in its own database, as its own user, which resolve maps it to.
// The migrations create the tables in the tenant's schema there, and the
// tenant's sessions log in with that schema as their search path.
func dedicatedModule(prefix string, resolve routing.Resolver) fx.Option {
	return postgres.Module("shop_dedicated", postgres.Routed(resolve, postgres.RoutedConfig{}), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		modules.RequiredIsolation(tenancy.Dedicated),
		modules.Migrations(migrations()),
		postgres.SQLRoute("own_dedicated", postgres.SQLConfig{Origin: tenancy.Compiled}))
}

// start starts the service with a database of its own for each of the
// dedicated tenants (see ownDatabase).
func start(ctx context.Context, dedicated ...tenancy.ID) (*app, error) {
	prefix, secret := "sqlc"+hex.EncodeToString(randBytes(4))+"_", randBytes(32)
	a := &app{placed: map[tenancy.ID]bool{}}
	creds := map[tenancy.ID]routing.Credentials{}
	var drops []func() error
	dropAll := func() (err error) {
		for _, d := range slices.Backward(drops) {
			err = errors.Join(err, d())
		}
		return err
	}
	for _, t := range dedicated {
		cr, drop, err := ownDatabase(ctx, prefix+t.Hex()[:8])
		if err != nil {
			return nil, errors.Join(err, dropAll())
		}
		creds[t], a.placed[t], drops = cr, true, append(drops, drop)
	}
	resolve := func(_ context.Context, t tenancy.ID) (routing.Credentials, error) {
		if cr, ok := creds[t]; ok {
			return cr, nil
		}
		return routing.Credentials{}, fmt.Errorf("tenant %s has no database of its own", t)
	}
	fxa := fx.New(fx.NopLogger, module(prefix, secret), dedicatedModule(prefix, resolve),
		fx.Invoke(fx.Annotate(func(c *postgres.Client, own *postgres.SQL, dc *postgres.Client, ded *postgres.SQL) {
			a.namespace, a.dedicated = shop{c, tasks.New(own)}, shop{dc, tasks.New(ded)}
		}, fx.ParamTags(`name:"shop"`, `name:"own"`, `name:"shop_dedicated"`, `name:"own_dedicated"`))))
	if err := fxa.Err(); err != nil {
		return nil, errors.Join(err, dropAll())
	}
	if err := fxa.Start(ctx); err != nil {
		return nil, errors.Join(err, dropAll())
	}
	a.stop = func() error { return errors.Join(fxa.Stop(context.Background()), dropAll()) }
	return a, nil
}

// ownDatabase makes what a dedicated tenant is given: a login role and a
// database it owns that no other role may connect to. The framework does
// not make these; a service's provisioning does, and hands the resolver
// the credentials.
func ownDatabase(ctx context.Context, name string) (routing.Credentials, func() error, error) {
	admin, err := pgx.Connect(ctx, dsn())
	if err != nil {
		return routing.Credentials{}, nil, err
	}
	password := hex.EncodeToString(randBytes(16))
	for _, stmt := range []string{
		"CREATE ROLE " + name + " LOGIN PASSWORD '" + password + "'",
		"CREATE DATABASE " + name + " OWNER " + name,
		"REVOKE CONNECT, TEMPORARY ON DATABASE " + name + " FROM PUBLIC",
	} {
		if _, err = admin.Exec(ctx, stmt); err != nil {
			break
		}
	}
	drop := func() error {
		_, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		if err == nil {
			_, err = admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+name)
		}
		return errors.Join(err, admin.Close(context.Background()))
	}
	if err != nil {
		return routing.Credentials{}, nil, errors.Join(err, drop())
	}
	u, err := url.Parse(dsn())
	if err != nil {
		return routing.Credentials{}, nil, errors.Join(err, drop())
	}
	u.User, u.Path = nil, "/"+name
	return routing.Credentials{Endpoint: u.String(), User: name, Secret: password}, drop, nil
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// run provisions three tenants (acme and globex at namespace, initech in
// its own database), gives each its projects and tasks through the
// generated queries, prints each tenant's join and report, and tears them
// down.
func run(w io.Writer) (err error) {
	ctx := context.Background()
	a, err := start(ctx, initech)
	if err != nil {
		return err
	}
	all := []tenancy.ID{acme, globex, initech}
	defer func() {
		for _, t := range all {
			if e := a.of(t).client.Teardown(ctx, t); err == nil {
				err = e
			}
		}
		if e := a.stop(); err == nil {
			err = e
		}
	}()
	for _, t := range all {
		if err := a.of(t).client.Provision(ctx, t); err != nil {
			return err
		}
	}
	work := map[tenancy.ID]map[string][]string{
		acme:    {"launch": {"write copy", "ship"}, "hiring": {"post role"}},
		globex:  {"audit": {"collect logs"}},
		initech: {"reports": {"write copy", "add cover sheet"}},
	}
	for _, t := range all {
		tctx, q := tenancy.WithTenant(ctx, t), a.of(t).q
		for project, titles := range work[t] {
			p, err := q.CreateProject(tctx, project)
			if err != nil {
				return err
			}
			for _, title := range titles {
				task, err := q.AddTask(tctx, tasks.AddTaskParams{ProjectID: p.ID, Title: title})
				if err != nil {
					return err
				}
				if title == "write copy" {
					if _, err := q.CompleteTask(tctx, task.ID); err != nil {
						return err
					}
				}
			}
		}
	}
	for _, t := range all {
		tctx, q := tenancy.WithTenant(ctx, t), a.of(t).q
		name := map[tenancy.ID]string{acme: "acme", globex: "globex", initech: "initech"}[t]
		list, err := q.ListTasks(tctx)
		if err != nil {
			return err
		}
		for _, l := range list {
			fmt.Fprintf(w, "%-7s task %-15s project %-7s done=%v\n", name, l.Title, l.Project, l.Done)
		}
		report, err := q.ProjectReport(tctx)
		if err != nil {
			return err
		}
		for _, r := range report {
			fmt.Fprintf(w, "%-7s report %-7s %d/%d done\n", name, r.Name, r.Done, r.Total)
		}
	}
	return nil
}
