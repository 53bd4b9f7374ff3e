package tenantadmin

// The JSON bodies the endpoints answer: the contract with their clients.

import "github.com/tenantwire/tenantwire/modules"

// tenantEntry is one tenant of GET /tenants.
type tenantEntry struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Suspended bool   `json:"suspended"`
}

// listPage is GET /tenants: tenants in id order after the request's after;
// Next, when set, is the after of the next page.
type listPage struct {
	Tenants []tenantEntry `json:"tenants"`
	Next    string        `json:"next,omitempty"`
}

// tenantStatus is GET /tenants/{id}.
type tenantStatus struct {
	ID string `json:"id"`
	// Registered: the registry lists the tenant; State and Versions are
	// its entry.
	Registered bool             `json:"registered"`
	State      string           `json:"state,omitempty"`
	Versions   map[string]int64 `json:"versions,omitempty"`
	// Suspended on the replica that answered.
	Suspended bool         `json:"suspended"`
	Modules   []modulePart `json:"modules"`
}

// modulePart is one module's part in the tenant lifecycle.
type modulePart struct {
	Module    string `json:"module"`
	Backend   string `json:"backend"`
	Provision bool   `json:"provision"`
	Offboard  bool   `json:"offboard"`
}

// stepResult is a step's answer: the per-module report, or with DryRun the
// plan, what would run in that order, with nothing changed. Suspend and
// resume have neither: they set one switch of the replica that every
// module's routes read, and run nothing in the modules.
type stepResult struct {
	Tenant string `json:"tenant"`
	Step   string `json:"step"`
	DryRun bool   `json:"dry_run,omitempty"`
	OK     bool   `json:"ok"`
	// Suspended on the replica that answered, after the step (before it,
	// on a dry run).
	Suspended bool          `json:"suspended"`
	Report    []reportLine  `json:"report,omitempty"`
	Plan      []plannedLine `json:"plan,omitempty"`
	// Proof is an offboard's erasure proof (modules.ErasureProof), its
	// digest over its content: keep it as it is.
	Proof *modules.ErasureProof `json:"proof,omitempty"`
	// Code and Error are set when a module failed (tenant_step_failed).
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// plannedLine is one module's line of a dry run: it would run, or would be
// skipped for the reason given.
type plannedLine struct {
	Module  string `json:"module"`
	Backend string `json:"backend"`
	Runs    bool   `json:"runs"`
	Skipped string `json:"skipped,omitempty"`
}

// reportLine is one module's line of a report.
type reportLine struct {
	Module  string `json:"module"`
	Backend string `json:"backend"`
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
	Code    string `json:"code,omitempty"`
	Skipped string `json:"skipped,omitempty"`
	// Checked is, after an offboard, the families the module's verifier
	// scanned ("kind name at where"); Left those still holding the
	// tenant's data.
	Checked []string `json:"checked,omitempty"`
	Left    []string `json:"left,omitempty"`
}

// errorBody is every refusal's body: the message, its code and what to do.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	Fix   string `json:"fix,omitempty"`
}
