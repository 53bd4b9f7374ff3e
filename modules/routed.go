package modules

import (
	"fmt"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/routing"
)

// CheckRouted refuses what no backend's Routed option can run on: no
// credential resolver, or a negative limit (which WithDefaults would
// take for the default). option names the backend's option in the fixes
// ("postgres.Routed").
func CheckRouted(rules floors.Backend, module, option string, resolve routing.Resolver, l routing.Limits) []error {
	var errs []error
	if resolve == nil {
		errs = append(errs, rules.WiringInvalid(module, "", option+" needs a credential resolver",
			"pass "+option+" a non-nil routing.Resolver that looks up each tenant's credentials"))
	}
	for _, lim := range []struct {
		name     string
		negative bool
		value    any
	}{
		{"MaxClients", l.MaxClients < 0, l.MaxClients},
		{"MaxConnsPerClient", l.MaxConnsPerClient < 0, l.MaxConnsPerClient},
		{"MaxTenants", l.MaxTenants < 0, l.MaxTenants},
		{"TTL", l.TTL < 0, l.TTL},
		{"MaxWait", l.MaxWait < 0, l.MaxWait},
	} {
		if lim.negative {
			errs = append(errs, rules.WiringInvalid(module, "", fmt.Sprintf("routing.Limits.%s %v is negative", lim.name, lim.value),
				fmt.Sprintf("set routing.Limits.%s to a positive value, or leave it 0 for the default", lim.name)))
		}
	}
	return errs
}
