// Command tenantvet runs tenantwire's static checks: standalone
// (tenantvet ./...) or under go vet (go vet -vettool=$(which tenantvet) ./...).
package main

import (
	"golang.org/x/tools/go/analysis/multichecker"

	"github.com/tenantwire/tenantwire/tenantvet/checks"
)

func main() { multichecker.Main(checks.All...) }
