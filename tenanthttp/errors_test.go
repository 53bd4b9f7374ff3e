package tenanthttp_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// TestWriteErrorNamesTheCodeNotTheService: a coded error a handler
// answers with WriteError gets the table's status and a body naming its
// code and a fixed message, never its module, backend, route or detail
// (those go to the log); a 503 says when to retry; an error with no
// public code is a 500 naming "internal".
func TestWriteErrorNamesTheCodeNotTheService(t *testing.T) {
	for _, c := range []struct {
		code   tenancy.Code
		status int
	}{
		{tenancy.CodeInvalidTenantHeader, 400},
		{tenancy.CodeTenantRequired, 400},
		{tenancy.CodeTenantHostAmbiguous, 400},
		{tenancy.CodeTenantSourceConflict, 403},
		{tenancy.CodeForeignTenant, 403},
		{tenancy.CodeTenantSuspended, 403},
		{tenancy.CodeTenantNotProvisioned, 409},
		{tenancy.CodeConnectionBudgetExhausted, 503},
		{tenancy.CodeTenantMigrationBehind, 503},
		{tenancy.CodeTenantRegistryUnavailable, 503},
		{tenancy.CodeTenantUnbound, 500},
		{tenancy.CodeTenantSourceInvalid, 500},
		{tenancy.ValidationFailed("postgres"), 500},
		{"", 500},
	} {
		err := errors.New("pgx: dial tcp 10.0.0.7:5432: schema t_secret_orders")
		if c.code != "" {
			err = fmt.Errorf("handler: %w", &tenancy.Error{Code: c.code, Module: "billing_pg", Backend: "postgres", Route: "invoices_by_tenant",
				Detail: "schema t_secret_orders on 10.0.0.7", Fix: "run tenantadmin provision on the operator listener"})
		}
		var logged bytes.Buffer
		old := slog.Default()
		slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/invoices/1", nil)
		r.Pattern = "GET /invoices/{id}"
		tenanthttp.WriteError(w, r, err)
		slog.SetDefault(old)
		wantCode := string(c.code)
		if c.status == 500 {
			wantCode = tenanthttp.CodeInternal
		}
		body := w.Body.String()
		if w.Code != c.status || tenanthttp.StatusOf(err) != c.status || !strings.Contains(body, `"code":"`+wantCode+`"`) ||
			w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%q: %d %s, want %d naming %s", c.code, w.Code, body, c.status, wantCode)
		}
		for _, secret := range []string{"billing_pg", "postgres", "invoices", "t_secret", "10.0.0.7", "tenantadmin", "pgx"} {
			if strings.Contains(body, secret) {
				t.Errorf("%q: the body %s names %q", c.code, body, secret)
			}
		}
		if got := w.Header().Get("Retry-After"); (got != "") != (c.status == 503) {
			t.Errorf("%q: Retry-After %q on a %d", c.code, got, c.status)
		}
		for _, want := range []string{"t_secret_orders", "GET /invoices/{id}"} {
			if !strings.Contains(logged.String(), want) {
				t.Errorf("%q: the log does not hold %q: %s", c.code, want, logged.String())
			}
		}
	}
}

// TestResolverRefusalsAreWriteErrors: the boundary's own refusals on the
// tenant listener are exactly what WriteError answers for them.
func TestResolverRefusalsAreWriteErrors(t *testing.T) {
	res, err := tenanthttp.NewResolver(tenanthttp.Config{TrustedProxy: true, RequireTenant: true, Host: hosts, Claim: func(r *http.Request) (tenancy.ID, bool) {
		id, ok := r.Context().Value(claimKey{}).(tenancy.ID)
		return id, ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := res.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("handler called on a refusal") }))
	for want, req := range map[error]func() *http.Request{
		tenanthttp.ErrInvalidHeader: func() *http.Request {
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set(tenanthttp.DefaultHeader, "acme")
			return r
		},
		tenanthttp.ErrTenantRequired: func() *http.Request { return httptest.NewRequest("GET", "/", nil) },
		tenanthttp.ErrSourceConflict: func() *http.Request {
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set(tenanthttp.DefaultHeader, tenantB.String())
			return r.WithContext(contextWithClaim(r, tenantA))
		},
		tenanthttp.ErrHostAmbiguous: func() *http.Request {
			r := httptest.NewRequest("GET", "http://alpha.example.com/", nil)
			r.RequestURI = "http://alpha.example.com/"
			return r
		},
	} {
		got, exp := httptest.NewRecorder(), httptest.NewRecorder()
		h.ServeHTTP(got, req())
		tenanthttp.WriteError(exp, nil, want)
		if got.Code != exp.Code || got.Body.String() != exp.Body.String() || got.Body.Len() == 0 {
			t.Errorf("%v: the boundary answered %d %s, WriteError %d %s", want, got.Code, got.Body, exp.Code, exp.Body)
		}
	}
}
