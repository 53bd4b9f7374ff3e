package tenantadmin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"

	"github.com/tenantwire/tenantwire/tenancy"
)

// ArchiveMediaType is the Content-Type of an archive (docs/archive.md):
// what GET /tenants/{id}/export answers and POST /tenants/{id}/import
// requires, a type no page can send without a CORS preflight.
const ArchiveMediaType = "application/x-ndjson"

// export streams the tenant's archive. Once the first line is sent a
// failure cannot change the status: the response is cut instead, and an
// archive without its manifest is refused by every import.
func (a *admin) export(w http.ResponseWriter, r *http.Request, _ query) {
	id, ok := tenantOf(w, r)
	if !ok {
		return
	}
	h := w.Header()
	h.Set("Content-Type", ArchiveMediaType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Disposition", `attachment; filename="tenant-`+id.String()+`.jsonl"`)
	if err := a.tenants.Export(r.Context(), id, w); err != nil {
		panic(http.ErrAbortHandler)
	}
}

// importArchive restores the body, an archive, into the tenant.
func (a *admin) importArchive(w http.ResponseWriter, r *http.Request, _ query) {
	id, ok := tenantOf(w, r)
	if !ok {
		return
	}
	a.step.Lock()
	defer a.step.Unlock()
	err := a.tenants.Import(r.Context(), id, r.Body)
	switch {
	case err == nil:
		reply(w, http.StatusOK, stepResult{Tenant: id.String(), Step: "import", OK: true, Suspended: a.tenants.Suspended(id)})
	case tenancy.CodeOf(err) != "":
		refuse(w, err)
	default:
		reply(w, http.StatusInternalServerError, errorBody{Error: err.Error(), Code: string(tenancy.CodeTenantStepFailed),
			Fix: "see the error; an import that failed part way is rerun once the target is offboarded and provisioned again (docs/archive.md)"})
	}
}

// archive runs export and import: export writes the archive to out as
// it arrives, import sends the file --file names.
func (r Remote) archive(ctx context.Context, base *url.URL, cmd string, rest []string, out io.Writer) error {
	id, flags, err := tenantArgs(cmd, rest)
	if err != nil {
		return err
	}
	path := "/tenants/" + id.String() + "/" + cmd
	if cmd == "export" {
		if len(flags) > 0 {
			return usage("export takes no flag")
		}
		return r.send(ctx, http.MethodGet, at(base, path, nil), nil, out)
	}
	file, set := flags["--file"]
	if !set || file == "" || len(flags) > 1 {
		return usage("import takes --file <path> only")
	}
	f, err := os.Open(file)
	if err != nil {
		return usage("import: " + err.Error())
	}
	defer f.Close()
	return r.send(ctx, http.MethodPost, at(base, path, nil), f, out)
}

// send is call for a streamed body: a 2xx answer is copied to out as it
// arrives, any other is the surface's coded error.
func (r Remote) send(ctx context.Context, method string, u *url.URL, body io.Reader, out io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", ArchiveMediaType)
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("tenantadmin: the operator listener did not answer: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		if _, err := io.Copy(out, resp.Body); err != nil {
			return fmt.Errorf("tenantadmin: reading the answer (cut short: an export without its manifest is refused by every import): %w", err)
		}
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e errorBody
	if json.Unmarshal(bytes.TrimSpace(b), &e) != nil || e.Code == "" {
		return fmt.Errorf("tenantadmin: %s %s answered %s, not a tenantadmin answer", method, u.Path, resp.Status)
	}
	return &tenancy.Error{Code: tenancy.Code(e.Code), Module: "tenantadmin", Detail: e.Error, Fix: e.Fix}
}
