package tenancytest_test

import (
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type note struct{ Text string }

// A refused module that provides stand-ins passes; one that provides
// nothing fails for the invoke placed before it ("missing type"), and one
// that hides the app's other violations fails too.
func TestRequireRefusedInAnyOrder(t *testing.T) {
	refused := memory.Module("notes", memory.Document[note]("notes", memory.DocumentConfig{TenantAware: true}))
	uses := map[string]fx.Option{"documents": tenancytest.Invoke[*memory.Documents[note]]("")}
	floorMiss := memory.Module("shop", modules.RequiredIsolation(tenancy.Namespace),
		memory.CacheRoute("carts", memory.CacheConfig{TenantAware: true, Keys: naming.Shared("carts")}))
	if failed := runCheck(t, func(tb testing.TB) {
		tenancytest.RequireRefusedInAnyOrder(tb, tenancy.CodeWiringInvalid, "notes", refused, uses, floorMiss)
	}); len(failed) != 0 {
		t.Fatalf("a module with stand-ins failed: %v", failed)
	}

	mod := floors.Module{Name: "bare", Backend: memory.Rules()}
	bare := fx.Module("bare", modules.Provide(mod, memory.Rules().WiringInvalid("bare", "r", "broken", "mend it")))
	if failed := runCheck(t, func(tb testing.TB) {
		tenancytest.RequireRefusedInAnyOrder(tb, tenancy.CodeWiringInvalid, "bare", bare, uses, floorMiss)
	}); len(failed) == 0 {
		t.Fatal("a refused module without stand-ins passed")
	}

	if failed := runCheck(t, func(tb testing.TB) {
		tenancytest.RequireRefusedInAnyOrder(tb, tenancy.CodeWiringInvalid, "other", refused, uses, floorMiss)
	}); len(failed) == 0 {
		t.Fatal("a refusal of another module passed")
	}
}

// runCheck runs check on a recorder, on its own goroutine so that a
// Fatalf stops it.
func runCheck(t *testing.T, check func(testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r.failed
}
