package floors_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

func TestMatrixRenderers(t *testing.T) {
	rep := floors.Check([]floors.Module{{Name: "orders", Backend: postgresLike(), Floor: tenancy.Namespace, WorstCaseConns: 640,
		Routes: []floors.Route{
			{Name: "docs", Kind: "document", TenantAware: true, Relations: []floors.Relation{{Role: "read", PerTenant: true}}},
			{Name: "beat", Kind: "fleet"},
		}}}, nil)
	var text, md, js bytes.Buffer
	if err := rep.Matrix.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.Matrix.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.Matrix.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"docs", "namespace", "640", "fleet", "warning: orders/docs"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.HasPrefix(md.String(), "| module | route |") || strings.Count(md.String(), "\n") != 4 {
		t.Errorf("markdown:\n%s", md.String())
	}
	var back floors.Matrix
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != 2 || back.Rows[0].Reached != tenancy.Namespace || back.Rows[0].WorstCaseConns != 640 || back.Rows[1].Scope != "fleet" {
		t.Errorf("JSON round trip: %+v", back.Rows)
	}
}
