// Package checks holds tenantvet's analyzers: each finds, in handler
// code, a way to lose the tenant that tenantwire would refuse only at run
// time (tenant_unbound) or not at all.
package checks

import "golang.org/x/tools/go/analysis"

// All is every check, in the order the docs give them.
var All = []*analysis.Analyzer{LostCtx, GoNoTenant, Rebind, TenantSQL, Bypass, InTxOuterCtx}
