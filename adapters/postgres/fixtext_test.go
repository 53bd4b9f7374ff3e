package postgres_test

import (
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Worker and aggregate refusals say exactly what to change, naming the
// config field; no server is needed.
func TestRefusalsSayWhatToChange(t *testing.T) {
	ob := postgres.OutboxRoute("events", postgres.OutboxConfig{Table: naming.Shared("outbox")})
	for name, c := range map[string]struct {
		opt fx.Option
		fix string
	}{
		"relay without destination": {postgres.Module("pg", postgres.Connect(nowhere), ob, postgres.Relay("events", outbox.RelayConfig{})),
			"set RelayConfig.Destination"},
		"negative retain": {postgres.Module("pg", postgres.Connect(nowhere), ob, postgres.Sweep("events", postgres.SweepConfig{Retain: -1})),
			"set postgres.SweepConfig.Retain to 0 (its default) or a positive duration, not -1ns"},
		"unknown aggregate": {postgres.Module("pg", postgres.Connect(nowhere), postgres.AnalyticsRoute("stats", postgres.AnalyticsConfig{
			Source: naming.Shared("docs"), Queries: map[string]postgres.Aggregate{"total": {Agg: "median", Field: "n"}}})),
			`correct AnalyticsConfig.Queries["total"]: Agg one of count, sum, avg, min, max`},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, c.opt)
			if !strings.Contains(e.Fix, c.fix) {
				t.Errorf("fix %q lacks %q", e.Fix, c.fix)
			}
		})
	}
}

// A route whose table or text search configuration is no identifier is
// refused under its own name with its own fix; a table that names an index
// after itself must leave room for the index's suffix. No server is needed.
func TestNameRefusalsNameTheRoute(t *testing.T) {
	bad := naming.Shared("Bad Name")
	// Long enough for a table, too long once "_pending" or "_tsv" is added.
	long := strings.Repeat("t", 60)
	cases := map[string]struct {
		opt postgres.Option
		fix string
	}{
		"counter table": {postgres.CounterRoute("r", postgres.CounterConfig{Table: bad}), "set CounterConfig.Table to a lower-case table name"},
		"inbox table":   {postgres.InboxRoute("r", postgres.InboxConfig{Table: bad}), "name the inbox table"},
		"idempotency table": {postgres.IdempotencyRoute("r", postgres.IdempotencyConfig{Table: bad}),
			"name the idempotency table"},
		"outbox table":             {postgres.OutboxRoute("r", postgres.OutboxConfig{Table: bad}), "name the outbox table"},
		"outbox table, no room":    {postgres.OutboxRoute("r", postgres.OutboxConfig{Table: naming.Shared(long)}), "name the outbox table"},
		"hub table, no room":       {postgres.HubSearchRoute("r", postgres.HubSearchConfig{Table: naming.Shared(long)}), "name the hub table"},
		"analytics source":         {postgres.AnalyticsRoute("r", postgres.AnalyticsConfig{Source: bad}), "set AnalyticsConfig.Source"},
		"document table":           {postgres.Document[struct{}]("r", postgres.DocumentConfig{Read: bad}), "use a lower-case table name"},
		"federated table leg":      {postgres.FederatedSearchRoute("r", postgres.FederatedConfig{Tables: []naming.Name{bad}}), "name the leg's table"},
		"search configuration":     {postgres.SearchRoute("r", postgres.SearchConfig{Read: naming.Shared("s"), Heap: naming.Shared("s"), Index: naming.Shared("s_i"), Config: "Bad Cfg"}), "name a text search configuration"},
		"hub search configuration": {postgres.HubSearchRoute("r", postgres.HubSearchConfig{Table: naming.Shared("h"), Config: "Bad Cfg"}), "name a text search configuration"},
		"federated configuration": {postgres.FederatedSearchRoute("r", postgres.FederatedConfig{Tables: []naming.Name{naming.Shared("f")}, Config: "Bad Cfg"}),
			"name a text search configuration"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, postgres.Module("pg", postgres.Connect(nowhere), c.opt))
			if e.Route != "r" || !strings.HasPrefix(e.Fix, c.fix) {
				t.Errorf("refusal of route %q with fix %q, want route r and fix %q", e.Route, e.Fix, c.fix)
			}
		})
	}
	// The same long name is a valid table where nothing is named after it.
	for name, opt := range map[string]postgres.Option{
		"inbox":   postgres.InboxRoute("r", postgres.InboxConfig{Table: naming.Shared(long)}),
		"counter": postgres.CounterRoute("r", postgres.CounterConfig{Table: naming.Shared(long)}),
	} {
		if err := fx.New(fx.NopLogger, postgres.Module("pg", postgres.Connect(nowhere), opt)).Err(); err != nil {
			t.Errorf("%s over a %d-byte table refused: %v", name, len(long), err)
		}
	}
}
