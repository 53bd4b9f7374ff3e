package tenantadmin_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
	"github.com/tenantwire/tenantwire/tenantadmin"
)

// TestExportImportEndpoints: GET /tenants/{id}/export streams A's
// archive; POST /tenants/{id}/import with it as the body restores it into
// C, which then reads A's entry; a body sent as a form, as text/plain or
// as JSON is refused with operator_request_forbidden, a second import into
// C with archive_target_not_empty and a truncated one with
// archive_invalid, and a cross-site request never reaches either.
func TestExportImportEndpoints(t *testing.T) {
	f := newMemFixture(t, tenantadmin.Config{})
	c := tenancytest.FreshTenant(t)
	resp, err := http.Get(f.base + "/tenants/" + a.String() + "/export")
	if err != nil {
		t.Fatal(err)
	}
	archive, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tenantadmin.ArchiveMediaType || !bytes.Contains(archive, []byte(`"manifest"`)) {
		t.Fatalf("export: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), archive)
	}
	for _, ct := range []string{"application/x-www-form-urlencoded", "text/plain", "application/json", ""} {
		status, body := f.do(req{method: "POST", path: "/tenants/" + c.String() + "/import", header: with(nil, "Content-Type", ct), body: string(archive)})
		wantCode(t, "import as "+ct, status, body, 403, tenancy.CodeOperatorRequestForbidden)
	}
	status, body := f.do(req{method: "POST", path: "/tenants/" + c.String() + "/import", header: with(with(nil, "Content-Type", tenantadmin.ArchiveMediaType), "Origin", "https://evil.example"), body: string(archive)})
	if status != 403 || f.hasData(c) {
		t.Errorf("a cross-site import: %d %v", status, body)
	}
	ndjson := with(nil, "Content-Type", tenantadmin.ArchiveMediaType)
	status, body = f.do(req{method: "POST", path: "/tenants/" + c.String() + "/import", header: ndjson, body: string(archive[:len(archive)/2])})
	wantCode(t, "truncated import", status, body, 400, tenancy.CodeArchiveInvalid)
	if f.hasData(c) {
		t.Fatal("a refused import wrote")
	}
	if status, body = f.do(req{method: "POST", path: "/tenants/" + c.String() + "/import", header: ndjson, body: string(archive)}); status != 200 || body["ok"] != true || !f.hasData(c) {
		t.Fatalf("import: %d %v", status, body)
	}
	status, body = f.do(req{method: "POST", path: "/tenants/" + c.String() + "/import", header: ndjson, body: string(archive)})
	wantCode(t, "second import", status, body, 400, tenancy.CodeArchiveTargetNotEmpty)
}

// TestRunExportImport: Run's export writes the archive, and import
// --file sends it into another tenant; a refused import is exit 2.
func TestRunExportImport(t *testing.T) {
	f := newMemFixture(t, tenantadmin.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := tenancytest.FreshTenant(t)
	var out bytes.Buffer
	if err := tenantadmin.Run(ctx, f.srv.OperatorAddr(), []string{"export", a.String()}, &out); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var res bytes.Buffer
	if err := tenantadmin.Run(ctx, f.srv.OperatorAddr(), []string{"import", c.String(), "--file", path}, &res); err != nil || !strings.Contains(res.String(), `"ok":true`) || !f.hasData(c) {
		t.Fatalf("import: %v %s", err, res.String())
	}
	err := tenantadmin.Run(ctx, f.srv.OperatorAddr(), []string{"import", c.String(), "--file", path}, &res)
	if tenantadmin.ExitCode(err) != 2 || tenancy.CodeOf(err) != tenancy.CodeArchiveTargetNotEmpty {
		t.Errorf("a second import: %v (exit %d)", err, tenantadmin.ExitCode(err))
	}
	for _, args := range [][]string{{"import", c.String()}, {"export", a.String(), "--dry-run"}, {"import", c.String(), "--file", path, "--dry-run"}, {"export"}} {
		if err := tenantadmin.Run(ctx, f.srv.OperatorAddr(), args, &res); tenantadmin.ExitCode(err) != 2 {
			t.Errorf("%v: %v", args, err)
		}
	}
}
