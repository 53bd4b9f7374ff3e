package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Option refusals say exactly what to change, naming the option.
func TestOptionRefusalsSayWhatToChange(t *testing.T) {
	handle := func(context.Context, memory.Message) error { return nil }
	for name, c := range map[string]struct {
		opt memory.Option
		fix string
	}{
		"empty container":    {memory.CacheRoute("c", memory.CacheConfig{}), "naming.Shared(name) (shared) or naming.PerTenant(base)"},
		"consumer no name":   {memory.Consume(memory.ConsumerConfig{Stream: "s", Handle: handle}), "set ConsumerConfig.Name"},
		"consumer no handle": {memory.Consume(memory.ConsumerConfig{Stream: "s", Name: "w"}), "ConsumerConfig.Handle"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, memory.Module("m", c.opt))
			if !strings.Contains(e.Fix, c.fix) {
				t.Errorf("fix %q lacks %q", e.Fix, c.fix)
			}
		})
	}
}
