package kafka_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// RequiredVersion and Migrations are checked at fx.New, before anything
// dials.
func TestRequiredVersionRefusedAtNew(t *testing.T) {
	steps := fstest.MapFS{
		"0001_retention.json": {Data: []byte(`{"configs": {"retention.ms": "3600000"}}`)},
		"0002_size.json":      {Data: []byte(`{"routes": ["orders"], "configs": {"max.message.bytes": "2000000"}}`)},
	}
	perTenant := kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant("orders.")})
	static := kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared("orders")})
	reg := modules.TenantRegistry(migrate.NewMemoryRegistry())
	brokers := kafka.Brokers(nowhere)
	for name, c := range map[string]struct {
		opts []kafka.Option
		want string
	}{
		"above newest":   {[]kafka.Option{perTenant, modules.Migrations(steps), modules.RequiredVersion(3), reg}, "above the newest migration (2)"},
		"no migrations":  {[]kafka.Option{perTenant, modules.RequiredVersion(1), reg}, "above the newest migration (0)"},
		"no registry":    {[]kafka.Option{perTenant, modules.Migrations(steps), modules.RequiredVersion(2)}, "tenants at start"},
		"static topics":  {[]kafka.Option{static, modules.Migrations(steps), modules.RequiredVersion(2), reg}, "without per-tenant topics"},
		"unknown route":  {[]kafka.Option{perTenant, modules.Migrations(fstest.MapFS{"0001_x.json": {Data: []byte(`{"routes": ["audit"], "configs": {"retention.ms": "1"}}`)}})}, `route "audit"`},
		"misnamed step":  {[]kafka.Option{perTenant, modules.Migrations(fstest.MapFS{"retention.json": {Data: []byte(`{}`)}})}, "<version>_<name>"},
		"step no config": {[]kafka.Option{perTenant, modules.Migrations(fstest.MapFS{"0001_x.json": {Data: []byte(`{"configs": {}}`)}})}, "sets no configs"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, kafka.Module("m", append(c.opts, brokers)...))
			if !strings.Contains(e.Detail, c.want) || e.Fix == "" || e.Module != "m" || e.Backend != "kafka" {
				t.Fatalf("refusal %+v, want detail naming %q and a fix", e, c.want)
			}
		})
	}
	tenancytest.RequireWires(t, kafka.Module("m", brokers, perTenant, modules.Migrations(steps), modules.RequiredVersion(2), reg))
}
