package floors_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

func TestEveryCodeIsDocumented(t *testing.T) {
	codes := []tenancy.Code{
		tenancy.CodeStatementOriginFloor, tenancy.CodeStatementOriginUnknown, tenancy.CodeTenantGlobalRequired,
		tenancy.CodeFleetTenantScoped, tenancy.CodeGlobalTenantScoped, tenancy.CodeTenantUnbound,
		tenancy.CodeTrustedProxyRequired, tenancy.CodeRouteUnclassified, tenancy.CodeInvalidTenantHeader,
		tenancy.CodeWorkerRouteUnknown, tenancy.CodeWiringInvalid, tenancy.CodeConnectionBudgetExceeded,
		tenancy.CodeTenantSourceConflict, tenancy.CodeRouteInvalid, tenancy.CodeTenantScopeChanged,
		tenancy.ValidationFailed("postgres"),
		tenancy.CodeTenantSourceInvalid, tenancy.CodeTenantHostAmbiguous, tenancy.CodeRouteClassOverlap,
		tenancy.CodeDedicatedTargetShared, tenancy.CodeConnectionBudgetExhausted,
		tenancy.CodeMigrationHistoryConflict, tenancy.CodeTenantMigrationBehind,
		tenancy.CodeStaticNameInTenantSpace, tenancy.CodeReservedName,
		tenancy.CodeTenantAdminUnwired, tenancy.CodeTenantIDInvalid, tenancy.CodeOffboardUnconfirmed,
		tenancy.CodeOperatorRequestInvalid, tenancy.CodeOperatorRequestForbidden, tenancy.CodeOperatorHostsInvalid, tenancy.CodeTenantStepFailed, tenancy.CodeTenantRegistryUnavailable,
		tenancy.CodeArchiveInvalid, tenancy.CodeArchiveMismatch, tenancy.CodeArchiveTargetNotEmpty,
	}
	for _, c := range codes {
		d, ok := floors.Explain(string(c))
		if !ok || d.Code != string(c) || d.Meaning == "" || d.Fix == "" {
			t.Errorf("code %s: %+v, %v", c, d, ok)
		}
	}
	if _, ok := floors.Explain("_tenancy_validation_failed"); ok {
		t.Error("an empty backend name was explained")
	}
	if _, ok := floors.Explain("no_such_code"); ok {
		t.Error("an unknown code was explained")
	}
	var b bytes.Buffer
	if err := floors.WriteCodesMarkdown(&b, floors.Backend{Name: "postgres"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range codes {
		if !strings.Contains(b.String(), "`"+string(c)+"`") {
			t.Errorf("errors.md lacks %s", c)
		}
	}
}
