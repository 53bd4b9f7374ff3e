package modules

// Part is one module's part in the tenant lifecycle.
type Part struct {
	Module, Backend string
	// Provisions: Provision runs the module's provisioning.
	Provisions bool
	// Offboards: Offboard runs the module's teardown; false means the
	// report says the module was skipped.
	Offboards bool
}

// SkippedNoTeardown is Offboard's skip reason for a module with no
// teardown, which a dry run repeats.
const SkippedNoTeardown = "the module keeps nothing per tenant that it can remove"

// SkippedNothingToCreate is Provision's line for a module that creates
// nothing ahead of a tenant's first call, which a dry run repeats.
const SkippedNothingToCreate = "the module creates nothing ahead of a tenant's first call"

// Parts lists the modules that take part in Provision and Offboard, in the
// order those steps run them, without running anything: what an operator's
// dry run answers.
func (t *Tenants) Parts() []Part {
	out := make([]Part, 0, len(t.states))
	for _, s := range t.states {
		out = append(out, Part{Module: s.Module, Backend: s.Backend, Provisions: s.Provision != nil, Offboards: s.Offboard != nil})
	}
	return out
}
