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
			"set SweepConfig.Retain to 0 (the default) or a positive duration, not -1ns"},
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
