package floors_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
)

// A backend documents its own codes: explain and errors.md find them
// through the backend given, with no entry in the shared catalogue.
func TestBackendCodes(t *testing.T) {
	b := floors.Backend{Name: "acme", Codes: []floors.CodeDoc{
		{Code: "acme_quota_blown", When: "run time", Meaning: "the acme quota ran out", Fix: "raise the acme quota"}}}
	if _, ok := floors.Explain("acme_quota_blown"); ok {
		t.Error("a backend's code explained without the backend")
	}
	d, ok := floors.Explain("acme_quota_blown", b)
	if !ok || d.Fix != "raise the acme quota" {
		t.Errorf("Explain(acme_quota_blown, acme) = %+v, %v", d, ok)
	}
	var md bytes.Buffer
	if err := floors.WriteCodesMarkdown(&md, b); err != nil {
		t.Fatal(err)
	}
	want := "## `acme_quota_blown`\n\n**Backend:** acme. **Raised:** run time\n\nthe acme quota ran out\n\n**Fix:** raise the acme quota\n"
	if !strings.Contains(md.String(), want) {
		t.Errorf("errors.md lacks the backend's entry:\n%s", md.String())
	}
}
