package tenantadmin_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
	"github.com/tenantwire/tenantwire/tenantadmin"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

type order struct{ Item string }

var (
	a, b = tenancytest.TenantA, tenancytest.TenantB
)

// fixture is one app on the real PostgreSQL server: a PostgreSQL module
// (per-tenant schema, the registry kept in the same database) and a memory
// module, with modules.Lifecycle, tenanthttp on 127.0.0.1:0 and the
// operator surface.
type fixture struct {
	t        *testing.T
	pool     *pgxpool.Pool
	prefix   string
	reg      *postgres.Registry
	srv      *tenanthttp.Server
	tenants  *modules.Tenants
	orders   *postgres.Documents[order]
	operator string // base URL
	tenant   string // base URL
}

func unique() string {
	p := make([]byte, 4)
	_, _ = rand.Read(p)
	return hex.EncodeToString(p)
}

func newFixture(t *testing.T, pgOpts ...postgres.Option) *fixture {
	t.Helper()
	return newFixtureWith(t, nil, pgOpts...)
}

// newFixtureWith is newFixture with more of the app's options.
func newFixtureWith(t *testing.T, extra []fx.Option, pgOpts ...postgres.Option) *fixture {
	t.Helper()
	dsn := testsvc.PostgresURL(t)
	u := unique()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	regSchema := "adm" + u + "_registry"
	reg, err := postgres.NewRegistry(pool, regSchema)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, pool: pool, prefix: "adm" + u + "_", reg: reg}
	opts := append([]postgres.Option{postgres.Connect(dsn), postgres.SchemaPrefix(f.prefix), modules.TenantRegistry(reg),
		postgres.Document[order]("orders", postgres.DocumentConfig{Read: naming.PerTenant("orders")})}, pgOpts...)
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		postgres.Module("pg", opts...),
		memory.Module("mem", modules.AllowTeardown(), memory.CacheRoute("carts", memory.CacheConfig{TenantAware: true, Keys: naming.Shared("carts")})),
		tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true}),
		// A tenant catch-all: the operator paths must still be 404 there.
		tenanthttp.Route("/", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "tenant route") })),
		tenantadmin.Module(tenantadmin.Config{Registry: reg}),
		fx.Options(extra...),
		fx.Populate(&f.srv, &f.tenants, &f.orders))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, id := range []tenancy.ID{a, b} {
			_, _ = f.tenants.Offboard(context.Background(), id)
		}
		_ = app.Stop(context.Background())
		// A module without AllowTeardown leaves its schemas: drop them here.
		bg := context.Background()
		rows, _ := pool.Query(bg, "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", f.prefix)
		var drop []string
		for rows.Next() {
			var n string
			_ = rows.Scan(&n)
			drop = append(drop, n)
		}
		rows.Close()
		for _, n := range append(drop, regSchema) {
			_, _ = pool.Exec(bg, "DROP SCHEMA IF EXISTS "+pgx.Identifier{n}.Sanitize()+" CASCADE")
		}
	})
	f.operator, f.tenant = "http://"+f.srv.OperatorAddr(), "http://"+f.srv.TenantAddr()
	return f
}

// do sends a request and decodes the JSON answer into a map.
func (f *fixture) do(method, url string) (int, map[string]any) {
	f.t.Helper()
	status, raw := f.raw(method, url, nil)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		f.t.Fatalf("%s %s: %d, body not JSON: %q", method, url, status, raw)
	}
	return status, m
}

// raw sends a request as an operator's client does: a POST with
// "Content-Type: application/json" and no body, unless header says
// otherwise.
func (f *fixture) raw(method, url string, header http.Header) (int, []byte) {
	f.t.Helper()
	return f.send(method, url, header, "")
}

func (f *fixture) send(method, url string, header http.Header, body string) (int, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.StatusCode, got
}

// schema reads on the server whether id's schema exists.
func (f *fixture) schema(id tenancy.ID) bool {
	f.t.Helper()
	var ok bool
	if err := f.pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", postgres.SchemaName(f.prefix, id)).Scan(&ok); err != nil {
		f.t.Fatal(err)
	}
	return ok
}

// registered reads the registry's table on the server: id's state, or "".
func (f *fixture) registered(id tenancy.ID) string {
	f.t.Helper()
	all, err := f.reg.List(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	for _, t := range all {
		if t.ID == id {
			return string(t.State)
		}
	}
	return ""
}

func (f *fixture) write(id tenancy.ID) error {
	_, err := f.orders.Create(tenancy.WithTenant(context.Background(), id), "o-"+unique(), order{"anvil"})
	return err
}

func wantCode(t *testing.T, what string, status int, body map[string]any, wantStatus int, code tenancy.Code) {
	t.Helper()
	if status != wantStatus || body["code"] != string(code) || body["error"] == "" {
		t.Errorf("%s: %d %v, want %d with code %s", what, status, body, wantStatus, code)
	}
}

func lines(body map[string]any, key string) []string {
	var out []string
	items, _ := body[key].([]any)
	for _, it := range items {
		m := it.(map[string]any)
		str := func(k string) string { s, _ := m[k].(string); return s }
		out = append(out, fmt.Sprintf("%v/%v ok=%v runs=%v skipped=%q error=%q", m["module"], m["backend"], m["ok"], m["runs"], str("skipped"), str("error")))
	}
	return out
}

// TestOperatorEndpoints drives every endpoint over real HTTP on the
// operator listener and reads the PostgreSQL server after each step: dry
// runs change nothing (no schema, no registry entry, no suspension), a
// provision creates the schema and the registry entry, a suspension
// refuses the tenant's calls and no other's, an offboard needs the
// tenant's own id as confirmation and then removes its schema and entry.
func TestOperatorEndpoints(t *testing.T) {
	f := newFixture(t, modules.AllowTeardown())
	op := f.operator

	st, body := f.do("GET", op+"/tenants")
	if st != 200 || len(body["tenants"].([]any)) != 0 || body["next"] != nil {
		t.Fatalf("empty registry: %d %v", st, body)
	}

	st, body = f.do("POST", op+"/tenants/"+a.String()+"/provision?dry_run=1")
	if got := strings.Join(lines(body, "plan"), "; "); st != 200 || body["dry_run"] != true || body["report"] != nil || got != `mem/memory ok=<nil> runs=false skipped="the module creates nothing ahead of a tenant's first call" error=""; pg/postgres ok=<nil> runs=true skipped="" error=""` {
		t.Fatalf("provision dry run: %d %v", st, body)
	}
	if f.schema(a) || f.registered(a) != "" {
		t.Fatal("a provision dry run created the schema or the registry entry")
	}

	for _, id := range []tenancy.ID{a, b} {
		st, body = f.do("POST", op+"/tenants/"+id.String()+"/provision")
		if got := strings.Join(lines(body, "report"), "; "); st != 200 || body["ok"] != true || body["suspended"] != false || got != `mem/memory ok=true runs=<nil> skipped="the module creates nothing ahead of a tenant's first call" error=""; pg/postgres ok=true runs=<nil> skipped="" error=""` {
			t.Fatalf("provision %s: %d %v", id, st, body)
		}
		if !f.schema(id) || f.registered(id) != string(migrate.Ready) {
			t.Fatalf("after provisioning %s: schema %v, registry %q", id, f.schema(id), f.registered(id))
		}
	}
	if err := f.write(a); err != nil {
		t.Fatalf("provisioned tenant: %v", err)
	}

	first, second := a.String(), b.String()
	if first > second {
		first, second = second, first
	}
	st, body = f.do("GET", op+"/tenants?limit=1")
	if tl := body["tenants"].([]any); st != 200 || len(tl) != 1 || tl[0].(map[string]any)["id"] != first || body["next"] != first {
		t.Fatalf("first page: %d %v", st, body)
	}
	st, body = f.do("GET", op+"/tenants?limit=1&after="+first)
	if tl := body["tenants"].([]any); st != 200 || len(tl) != 1 || tl[0].(map[string]any)["id"] != second || body["next"] != nil {
		t.Fatalf("second page: %d %v", st, body)
	}

	st, body = f.do("GET", op+"/tenants/"+a.String())
	mods, _ := json.Marshal(body["modules"])
	if st != 200 || body["registered"] != true || body["state"] != "ready" || body["suspended"] != false ||
		string(mods) != `[{"backend":"memory","module":"mem","offboard":true,"provision":false},{"backend":"postgres","module":"pg","offboard":true,"provision":true}]` {
		t.Fatalf("status: %d %v %s", st, body, mods)
	}

	st, body = f.do("POST", op+"/tenants/"+a.String()+"/suspend")
	if st != 200 || body["ok"] != true || body["suspended"] != true || !f.tenants.Suspended(a) {
		t.Fatalf("suspend: %d %v", st, body)
	}
	if err := f.write(a); tenancy.CodeOf(err) != tenancy.CodeTenantSuspended {
		t.Errorf("suspended tenant's write: %v", err)
	}
	if err := f.write(b); err != nil {
		t.Errorf("another tenant's write while A is suspended: %v", err)
	}
	_, body = f.do("GET", op+"/tenants")
	for _, e := range body["tenants"].([]any) {
		m := e.(map[string]any)
		if want := m["id"] == a.String(); m["suspended"] != want {
			t.Errorf("list while A is suspended: %v", m)
		}
	}
	st, body = f.do("POST", op+"/tenants/"+a.String()+"/resume")
	if st != 200 || body["suspended"] != false || f.tenants.Suspended(a) {
		t.Fatalf("resume: %d %v", st, body)
	}
	if err := f.write(a); err != nil {
		t.Errorf("resumed tenant: %v", err)
	}

	st, body = f.do("POST", op+"/tenants/"+a.String()+"/offboard?dry_run=1")
	if got := strings.Join(lines(body, "plan"), "; "); st != 200 || body["dry_run"] != true || got != `mem/memory ok=<nil> runs=true skipped="" error=""; pg/postgres ok=<nil> runs=true skipped="" error=""` {
		t.Fatalf("offboard dry run: %d %v", st, body)
	}
	if !f.schema(a) || f.registered(a) != string(migrate.Ready) || f.tenants.Suspended(a) {
		t.Fatal("an offboard dry run removed the schema or the registry entry, or suspended the tenant")
	}

	for _, q := range []string{"", "?confirm=", "?confirm=" + b.String(), "?confirm=not-an-id"} {
		st, body = f.do("POST", op+"/tenants/"+a.String()+"/offboard"+q)
		wantCode(t, "offboard "+q, st, body, 400, tenancy.CodeOffboardUnconfirmed)
	}
	if !f.schema(a) || f.registered(a) == "" || f.tenants.Suspended(a) {
		t.Fatal("an unconfirmed offboard changed something")
	}

	st, body = f.do("POST", op+"/tenants/"+a.String()+"/offboard?confirm="+strings.ToUpper(a.String()))
	if got := strings.Join(lines(body, "report"), "; "); st != 200 || body["ok"] != true || body["suspended"] != true || got != `mem/memory ok=true runs=<nil> skipped="" error=""; pg/postgres ok=true runs=<nil> skipped="" error=""` {
		t.Fatalf("offboard: %d %v", st, body)
	}
	// Each module's line lists what its verifier checked on the server.
	for _, it := range body["report"].([]any) {
		m := it.(map[string]any)
		checked, _ := m["checked"].([]any)
		if len(checked) == 0 || m["left"] != nil {
			t.Errorf("offboard line of %v: checked %v, left %v", m["module"], m["checked"], m["left"])
		}
		if m["module"] == "pg" && !strings.Contains(fmt.Sprint(checked), "schema schema at "+f.prefix) {
			t.Errorf("postgres line does not name the tenant's schema: %v", checked)
		}
	}
	// The answer carries the erasure proof, which holds its digest.
	proof, _ := json.Marshal(body["proof"])
	var p modules.ErasureProof
	if err := json.Unmarshal(proof, &p); err != nil || !p.Erased || p.Tenant != a.String() || len(p.Modules) != 2 || p.Check() != nil {
		t.Errorf("offboard proof: %s (%v, check %v)", proof, err, p.Check())
	}
	if f.schema(a) || f.registered(a) != "" || !f.tenants.Suspended(a) {
		t.Fatalf("after offboarding A: schema %v, registry %q, suspended %v", f.schema(a), f.registered(a), f.tenants.Suspended(a))
	}
	if !f.schema(b) || f.write(b) != nil {
		t.Error("offboarding A touched B")
	}
	st, body = f.do("GET", op+"/tenants/"+a.String())
	if st != 200 || body["registered"] != false || body["suspended"] != true {
		t.Errorf("status after offboarding: %d %v", st, body)
	}
}

// TestEndpointsNotOnTenantListener: every operator endpoint is a 404 on
// the tenant listener, even beside a tenant catch-all and with a tenant
// named, and nothing runs: the tenant is neither provisioned nor suspended.
func TestEndpointsNotOnTenantListener(t *testing.T) {
	f := newFixture(t, modules.AllowTeardown())
	id := a.String()
	h := http.Header{"X-Tenant-Id": {id}}
	st, raw := f.raw("GET", f.tenant+"/elsewhere", h)
	if st != 200 || string(raw) != "tenant route" {
		t.Fatalf("the tenant catch-all: %d %q", st, raw)
	}
	for _, r := range [][2]string{
		{"GET", "/tenants"}, {"GET", "/tenants/" + id},
		{"POST", "/tenants/" + id + "/provision"}, {"POST", "/tenants/" + id + "/suspend"},
		{"POST", "/tenants/" + id + "/resume"}, {"POST", "/tenants/" + id + "/offboard?confirm=" + id},
		{"POST", "/tenants/" + id + "/provision?dry_run=1"},
	} {
		if st, raw := f.raw(r[0], f.tenant+r[1], h); st != 404 {
			t.Errorf("%s %s on the tenant listener: %d %q", r[0], r[1], st, raw)
		}
		if st, _ := f.raw(r[0], f.operator+r[1], nil); st == 404 {
			t.Errorf("%s %s on the operator listener: 404", r[0], r[1])
		}
		// Undo what the operator listener did, so the next tenant-listener
		// request is judged on a known state.
		f.tenants.Resume(a)
	}
	// The requests above reached the operator listener after the tenant
	// one; here a fresh tenant, asked of the tenant listener only, shows
	// that nothing ran there, through an escaped slash either.
	c := tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c")
	t.Cleanup(func() { _, _ = f.tenants.Offboard(context.Background(), c) })
	for _, r := range []string{"/tenants/" + c.String() + "/provision", "/tenants/" + c.String() + "/suspend", "/tenants%2F" + c.String() + "/suspend"} {
		if st, _ := f.raw("POST", f.tenant+r, h); st != 404 {
			t.Errorf("POST %s on the tenant listener: %d", r, st)
		}
	}
	if f.schema(c) || f.registered(c) != "" || f.tenants.Suspended(c) {
		t.Error("a request on the tenant listener ran a step")
	}
}

// TestMalformedRequests: a tenant id that is not a canonical UUID is a 400
// tenant_id_invalid on every endpoint; a parameter an endpoint does not
// take, or a dry_run it cannot read, is a 400 operator_request_invalid and
// runs nothing (a misspelt dry run is never a real run).
func TestMalformedRequests(t *testing.T) {
	f := newFixture(t, modules.AllowTeardown())
	op := f.operator
	for _, bad := range []string{"acme", "{" + a.String() + "}", "urn:uuid:" + a.String(), a.Hex(), "00000000-0000-0000-0000-000000000000", a.String() + "0", " " + a.String()} {
		esc := strings.ReplaceAll(strings.ReplaceAll(bad, "{", "%7B"), " ", "%20")
		esc = strings.ReplaceAll(esc, "}", "%7D")
		for _, r := range [][2]string{{"GET", ""}, {"POST", "/provision"}, {"POST", "/suspend"}, {"POST", "/resume"}, {"POST", "/offboard?confirm=" + esc}} {
			st, body := f.do(r[0], op+"/tenants/"+esc+r[1])
			wantCode(t, r[0]+" "+bad+r[1], st, body, 400, tenancy.CodeTenantIDInvalid)
		}
	}
	id := a.String()
	for _, q := range []string{
		"/provision?dry_run=yes", "/provision?dry_run=", "/provision?dry_run=1&dry_run=1", "/provision?dryrun=1", "/provision?confirm=" + id,
		"/offboard?confirm=" + id + "&confirm=" + id, "/offboard?dry_run=1&confirm=" + id,
		"/offboard?dry_run=on&confirm=" + id, "/offboard?dry-run=1&confirm=" + id, "/suspend?dry_run=1", "/resume?x=1",
	} {
		st, body := f.do("POST", op+"/tenants/"+id+q)
		wantCode(t, q, st, body, 400, tenancy.CodeOperatorRequestInvalid)
	}
	st, body := f.do("GET", op+"/tenants/"+id+"?verbose=1")
	wantCode(t, "status with a parameter", st, body, 400, tenancy.CodeOperatorRequestInvalid)
	if f.schema(a) || f.registered(a) != "" || f.tenants.Suspended(a) {
		t.Fatal("a refused request ran a step")
	}
	for _, q := range []string{"limit=0", "limit=-1", "limit=1001", "limit=ten", "after=acme", "offset=10"} {
		st, body := f.do("GET", op+"/tenants?"+q)
		wantCode(t, q, st, body, 400, tenancy.CodeOperatorRequestInvalid)
	}
	// A suspended tenant stays suspended through a misspelt dry run of
	// provision, which would otherwise resume it.
	f.tenants.Suspend(a)
	st, body = f.do("POST", op+"/tenants/"+id+"/provision?dry_run=ja")
	wantCode(t, "dry_run=ja", st, body, 400, tenancy.CodeOperatorRequestInvalid)
	if !f.tenants.Suspended(a) || f.schema(a) {
		t.Error("a misspelt dry run ran the provision")
	}
}

// TestStepFailureReported: a module that cannot remove the tenant's data
// (built without AllowTeardown) fails its line; the answer is a 409
// tenant_step_failed carrying the report, and the tenant stays suspended
// with its schema.
func TestStepFailureReported(t *testing.T) {
	f := newFixture(t)
	if st, body := f.do("POST", f.operator+"/tenants/"+a.String()+"/provision"); st != 200 {
		t.Fatalf("provision: %d %v", st, body)
	}
	st, body := f.do("POST", f.operator+"/tenants/"+a.String()+"/offboard?confirm="+a.String())
	rep, _ := body["report"].([]any)
	if st != 409 || body["ok"] != false || body["code"] != string(tenancy.CodeTenantStepFailed) || len(rep) != 2 {
		t.Fatalf("failed offboard: %d %v", st, body)
	}
	if l := rep[1].(map[string]any); l["module"] != "pg" || l["ok"] != false || !strings.Contains(l["error"].(string), "AllowTeardown") {
		t.Errorf("failed line: %v", l)
	}
	if !f.schema(a) || !f.tenants.Suspended(a) {
		t.Error("a failed offboard did not leave the tenant suspended with its data")
	}
}

// TestRefusedWithoutLifecycle: the module refuses at fx.New, before any
// listener opens, an app without modules.Lifecycle and a Config without a
// registry, with tenant_admin_unwired; also in an app without tenanthttp.
func TestRefusedWithoutLifecycle(t *testing.T) {
	reg := migrate.NewMemoryRegistry()
	for name, opts := range map[string][]fx.Option{
		"no lifecycle": {tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true}), tenantadmin.Module(tenantadmin.Config{Registry: reg})},
		"no boundary":  {tenantadmin.Module(tenantadmin.Config{Registry: reg})},
		"no registry":  {modules.Lifecycle(), tenantadmin.Module(tenantadmin.Config{})},
	} {
		app := fx.New(append([]fx.Option{fx.NopLogger, memory.Module("mem")}, opts...)...)
		err := app.Err()
		if tenancy.CodeOf(err) != tenancy.CodeTenantAdminUnwired {
			t.Errorf("%s: %v", name, err)
		}
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(), memory.Module("mem"), tenantadmin.Module(tenantadmin.Config{Registry: reg}))
	if err := app.Err(); err != nil {
		t.Errorf("a wired app: %v", err)
	}
}

// TestRun drives the main helper against the running replica's operator
// listener: each subcommand's output and exit status, refusals that send
// nothing (exit 2), a failed step (exit 1, report written) and a replica
// that is not the surface.
func TestRun(t *testing.T) {
	f := newFixture(t, modules.AllowTeardown())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(args ...string) (string, int) {
		var out bytes.Buffer
		err := tenantadmin.Run(ctx, f.srv.OperatorAddr(), args, &out)
		return out.String(), tenantadmin.ExitCode(err)
	}
	id := a.String()
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"provision", id, "--dry-run"}, 0, `{"module":"pg","backend":"postgres","runs":true}]`},
		{[]string{"list"}, 0, ""},
		{[]string{"provision", id}, 0, `{"module":"pg","backend":"postgres","ok":true}]`},
		{[]string{"provision", b.String()}, 0, `"ok":true`},
		{[]string{"status", id}, 0, `"registered":true,"state":"ready"`},
		{[]string{"suspend", id}, 0, `"step":"suspend","ok":true,"suspended":true`},
		{[]string{"resume", id}, 0, `"suspended":false`},
		{[]string{"offboard", id}, 2, ""},
		{[]string{"offboard", id, "--confirm", b.String()}, 2, ""},
		{[]string{"offboard", id, "--confirm"}, 2, ""},
		{[]string{"offboard", id, "--confirm", id, "--dry-run"}, 2, ""},
		{[]string{"offboard", id, "--dry-run"}, 0, `"dry_run":true`},
		{[]string{"provision", "acme"}, 2, ""},
		{[]string{"suspend", id, "--dry-run"}, 2, ""},
		{[]string{"destroy", id}, 2, ""},
		{[]string{"suspend"}, 2, ""},
		{nil, 2, ""},
	} {
		out, code := run(c.args...)
		if code != c.code || !strings.Contains(out, c.out) {
			t.Errorf("%v: exit %d, output %q; want exit %d with %q", c.args, code, out, c.code, c.out)
		}
	}
	if !f.schema(a) || f.tenants.Suspended(a) {
		t.Fatal("a refused or dry command changed the tenant")
	}
	out, code := run("list")
	want := []string{a.String(), b.String()}
	if want[0] > want[1] {
		want[0], want[1] = want[1], want[0]
	}
	if code != 0 || out != `{"id":"`+want[0]+`","state":"ready","suspended":false}`+"\n"+`{"id":"`+want[1]+`","state":"ready","suspended":false}`+"\n" {
		t.Errorf("list: exit %d, %q", code, out)
	}
	if out, code := run("offboard", id, "--confirm="+id); code != 0 || !strings.Contains(out, `"ok":true`) || f.schema(a) {
		t.Errorf("offboard: exit %d, %q, schema still there: %v", code, out, f.schema(a))
	}

	// Not the surface: the tenant listener answers 404 in plain text,
	// which is never taken for success; nothing listening is exit 1.
	var out2 bytes.Buffer
	if err := tenantadmin.Run(ctx, f.srv.TenantAddr(), []string{"suspend", b.String()}, &out2); tenantadmin.ExitCode(err) != 1 || f.tenants.Suspended(b) {
		t.Errorf("Run against the tenant listener: %v", err)
	}
	if err := tenantadmin.Run(ctx, "127.0.0.1:1", []string{"status", id}, &out2); tenantadmin.ExitCode(err) != 1 {
		t.Errorf("Run against nothing: %v", err)
	}
	if err := tenantadmin.Run(ctx, "", []string{"status", id}, &out2); tenantadmin.ExitCode(err) != 2 {
		t.Errorf("Run with no address: %v", err)
	}
}

// TestRunStepFailure: a failed step is exit 1 with its report written.
func TestRunStepFailure(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := a.String()
	var out bytes.Buffer
	if err := tenantadmin.Run(ctx, f.operator, []string{"provision", id}, &out); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err := tenantadmin.Run(ctx, f.operator, []string{"offboard", id, "--confirm", id}, &out)
	if tenantadmin.ExitCode(err) != 1 || tenancy.CodeOf(err) != tenancy.CodeTenantStepFailed || !strings.Contains(out.String(), `"ok":false`) || !strings.Contains(out.String(), "AllowTeardown") {
		t.Errorf("failed offboard: %v, %q", err, out.String())
	}
}
