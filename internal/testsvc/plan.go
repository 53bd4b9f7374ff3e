package testsvc

import (
	"fmt"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Plan is a provisioning dry run's report per tenant, in order: what it
// would create (Change.Create), then "step N" for each step that would run.
func Plan(rep migrate.Report) map[tenancy.ID][]string {
	out := map[tenancy.ID][]string{}
	for _, c := range rep.Changes {
		what := c.Create
		if what == "" {
			what = fmt.Sprintf("step %d", c.Version)
		}
		out[c.Tenant] = append(out[c.Tenant], what)
	}
	return out
}
