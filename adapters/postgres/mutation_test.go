package postgres

// Tests that pin down naming and statement-layout code mutation testing
// found unchecked (make mutate; docs/reliability.md).

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

func TestValidNameEdges(t *testing.T) {
	for _, ok := range []string{"a", "z", "_", "az_09", "a9", strings.Repeat("n", 10)} {
		if err := validName(ok, 10); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("n", 11), "0a", "9a", "a`", "a{", "a/", "a:", "aA", "a-"} {
		if validName(bad, 10) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestTenantNamesExact(t *testing.T) {
	id := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	const hex = "0a0a0a0a00004000800000000000000a"
	if got := SchemaName("tenant_", id); got != "tenant_"+hex {
		t.Errorf("SchemaName = %q", got)
	}
	if got := RoleName("tenant_", id); got != "tenant_"+hex+"_ro" {
		t.Errorf("RoleName = %q", got)
	}
	if got := ident(naming.PerTenant("orders"), "tenant_", "shared", id).Sanitize(); got != `"tenant_`+hex+`"."orders"` {
		t.Errorf("per-tenant ident = %s", got)
	}
	if got := ident(naming.Shared("orders"), "tenant_", "shared", id).Sanitize(); got != `"shared"."orders"` {
		t.Errorf("static ident = %s", got)
	}
}

// Placeholders count past 9; the tenant is $1 of a tagged statement.
func TestPlaceholders(t *testing.T) {
	for i := 0; i < 130; i++ {
		if got := itoa(i); got != strconv.Itoa(i) {
			t.Fatalf("itoa(%d) = %q", i, got)
		}
	}
	if got := (sql{}).p(10); got != "$10" {
		t.Errorf("untagged p(10) = %q", got)
	}
	if got := (sql{tagged: true}).p(9); got != "$10" {
		t.Errorf("tagged p(9) = %q", got)
	}
}

func TestTaggedStatementParts(t *testing.T) {
	tagged, plain := sql{tagged: true}, sql{}
	for _, c := range []struct{ got, want string }{
		{tagged.where(), "tenant_id = $1 AND "}, {plain.where(), ""},
		{tagged.col(), "tenant_id, "}, {plain.col(), ""},
		{tagged.val(), "$1, "}, {plain.val(), ""},
		{tagged.tenantColumn(), "tenant_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001', "}, {plain.tenantColumn(), ""},
		{tagged.key("id"), "PRIMARY KEY (tenant_id, id)"}, {plain.key("id"), "PRIMARY KEY (id)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	id := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	if got, want := args(true, id, "k", 1), []any{id.Bytes(), "k", 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("tagged args = %v, want %v", got, want)
	}
	if got, want := args(false, id, "k", 1), []any{"k", 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("untagged args = %v, want %v", got, want)
	}
}

// execOne reports "none" only when the statement ran and touched no row; a
// failed statement returns its own error, never a not-found.
func TestExecOneTellsNoRowFromFailure(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	none := errors.New("no such row")
	if err := execOne(ctx, pool, "SELECT 1", nil, none); err != nil {
		t.Errorf("one row touched: %v", err)
	}
	if err := execOne(ctx, pool, "SELECT 1 WHERE false", nil, none); !errors.Is(err, none) {
		t.Errorf("no row touched: %v, want none", err)
	}
	if err := execOne(ctx, pool, "SELEC 1", nil, none); err == nil || errors.Is(err, none) {
		t.Errorf("failed statement: %v, want its own error", err)
	}
}
