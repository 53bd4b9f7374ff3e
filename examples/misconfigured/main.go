// Command misconfigured shows three wirings tenantwire refuses during
// fx.New, before any OnStart hook runs: an origin-floor miss, a
// declared-floor miss and an unbound worker over a tenant-aware stream.
// It prints each refusal's code and fix, and exits 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

type note struct {
	Text string `json:"text"`
}

// Wirings are the three misconfigurations, each a complete app.
var wirings = []struct {
	title string
	opts  []fx.Option
}{
	{
		"compiled queries on a shared, tagged container",
		[]fx.Option{memory.Module("search",
			memory.Document[note]("notes", memory.DocumentConfig{
				TenantAware: true, Read: naming.Shared("notes"),
				Origin: tenancy.Compiled, // a runtime compiler writes the filters
			}))},
	},
	{
		"a namespace floor over a tagged route",
		[]fx.Option{memory.Module("billing",
			modules.RequiredIsolation(tenancy.Namespace),
			memory.Document[note]("invoices", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("invoices")}))},
	},
	{
		"an unbound consumer over a tenant-aware stream",
		[]fx.Option{memory.Module("events",
			memory.StreamRoute("audit", memory.StreamConfig{TenantAware: true, Stream: naming.Shared("audit")}),
			memory.Consume(memory.ConsumerConfig{
				Name: "audit-indexer", Stream: "audit",
				Handle: func(context.Context, memory.Message) error { return nil },
			}))},
	},
}

func main() {
	if run(os.Stdout) {
		os.Exit(1)
	}
}

// run builds every wiring and reports whether any was refused.
func run(w io.Writer) (refused bool) {
	for i, wiring := range wirings {
		fmt.Fprintf(w, "%d. %s\n", i+1, wiring.title)
		started := false
		opts := append([]fx.Option{fx.NopLogger,
			fx.Invoke(func(lc fx.Lifecycle) {
				lc.Append(fx.Hook{OnStart: func(context.Context) error { started = true; return nil }})
			})}, wiring.opts...)
		app := fx.New(opts...)
		err := app.Err()
		if err == nil {
			fmt.Fprintln(w, "   accepted (unexpected)")
			continue
		}
		_ = app.Start(context.Background())
		refused = true
		var coded *tenancy.Error
		if !errors.As(err, &coded) {
			fmt.Fprintf(w, "   refused without a code: %v\n", err)
			continue
		}
		fmt.Fprintf(w, "   refused: %s\n", coded.Code)
		fmt.Fprintf(w, "   module=%s route=%s reached=%s required=%s\n", coded.Module, coded.Route, coded.Reached, coded.Required)
		fmt.Fprintf(w, "   why: %s\n   fix: %s\n", coded.Detail, coded.Fix)
		fmt.Fprintf(w, "   OnStart hooks run: %v\n", started)
	}
	return refused
}
