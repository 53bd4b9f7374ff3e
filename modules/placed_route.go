package modules

import (
	"context"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
)

// PlacedRoute is the route object of a module with placements as its
// backend builds it: the route object of each placement's module, and
// the placer that picks one per call. A backend's route type holds one
// and serves each call from the object Pick returns.
type PlacedRoute[R any] struct {
	placer *Placer
	route  string
	at     [len(tenancy.Tiers)]R
}

// Pick is the route object serving the tenant ctx binds, for a read or
// a write (Placer.At); the caller runs end once the call is over.
func (p *PlacedRoute[R]) Pick(ctx context.Context, write bool) (R, func(), error) {
	at, end, err := p.placer.At(ctx, p.route, write)
	if err != nil {
		var zero R
		return zero, nil, err
	}
	return p.at[at], end, nil
}

// OnPlacement runs call on the route object serving ctx's tenant (Pick),
// ending the call once it returns.
func OnPlacement[R, V any](p *PlacedRoute[R], ctx context.Context, write bool, call func(R) (V, error)) (V, error) {
	in, end, err := p.Pick(ctx, write)
	if err != nil {
		var zero V
		return zero, err
	}
	defer end()
	return call(in)
}

// PlacedModuleName is the module serving the placement at of module.
func PlacedModuleName(module string, at tenancy.Tier) string { return module + "." + at.String() }

// PlacedRouteName is the private name the placement's module sub
// provides route under.
func PlacedRouteName(sub, route string) string { return sub + "/" + route }

// ProvidePlaced provides the route object of type R of module's route
// under the route's name (and unnamed, when asked): wrap makes it from
// the objects each placement's module provides privately, under
// PlacedRouteName; subs names those modules by tier.
func ProvidePlaced[R any](backend, module, route string, o Offer, subs map[tenancy.Tier]string, unnamed bool, wrap func(*PlacedRoute[R]) R) fx.Option {
	tags := []string{`optional:"true"`}
	for _, at := range tenancy.Tiers[1:] {
		if name, ok := subs[at]; ok {
			tags = append(tags, `name:"`+PlacedRouteName(name, route)+`"`)
		} else {
			tags = append(tags, `name:"tenantwire.unplaced" optional:"true"`)
		}
	}
	ctor := func(s *Suspensions, tagged, namespace, dedicated R) R {
		p := &PlacedRoute[R]{placer: NewPlacer(backend, module, o, s), route: route}
		p.at[tenancy.Tagged], p.at[tenancy.Namespace], p.at[tenancy.Dedicated] = tagged, namespace, dedicated
		return wrap(p)
	}
	out := []fx.Option{fx.Provide(fx.Annotate(ctor, fx.ParamTags(tags...), fx.ResultTags(`name:"`+route+`"`)))}
	if unnamed {
		out = append(out, fx.Provide(fx.Annotate(func(r R) R { return r }, fx.ParamTags(`name:"`+route+`"`))))
	}
	return fx.Options(out...)
}
