package tenantgrpc_test

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
	"github.com/tenantwire/tenantwire/tenantgrpc"
)

// Keys no call can carry to a handler as the text a proxy set: gRPC's
// client refuses them, drops them, or the server resets the stream.
var uncarriedKeys = []string{
	"x tenant", "x-tenant-id ", " x-tenant-id", "x-tenant:id", "x-tenant-ïd", "x/tenant", "x~tenant", "x=tenant",
	"content-type", "user-agent", "te", "connection", "grpc-timeout", "grpc-encoding", ":authority",
}

// Keys refused by rule although some call could carry them: a binary key
// (its values are decoded bytes), gRPC's reserved namespace, and names
// the HTTP boundary refuses because proxies consume or drop them.
var ruledOutKeys = []string{
	"x-tenant-id-bin", "X-Tenant-ID-Bin", "grpc-tenant", "host", "transfer-encoding", "keep-alive", "upgrade",
	"proxy-authorization", "proxy-connection", "trailer", "content-length",
}

// TestMetadataKeyMustReachHandlers: a key gRPC cannot carry as text, a
// binary key and a reserved one are refused at fx.New with
// tenant_source_invalid (and by NewResolver and NewOutgoing); every key
// accepted is carried intact by a real client to a real server, and the
// uncarried ones are indeed not.
func TestMetadataKeyMustReachHandlers(t *testing.T) {
	for _, key := range slices.Concat(uncarriedKeys, ruledOutKeys) {
		cfg := tenantgrpc.Config{TrustedProxy: true, Key: key}
		e := tenancytest.RequireRefused(t, tenancy.CodeTenantSourceInvalid, tenantgrpc.Module(cfg))
		if e.Module != "tenantgrpc" || !strings.Contains(e.Detail, strconv.Quote(strings.ToLower(key))) || e.Fix == "" {
			t.Errorf("%q: refusal does not say what and how: %v", key, e)
		}
		if _, err := tenantgrpc.NewResolver(cfg); tenancy.CodeOf(err) != tenancy.CodeTenantSourceInvalid {
			t.Errorf("NewResolver with key %q: %v", key, err)
		}
		if _, err := tenantgrpc.NewOutgoing(key); tenancy.CodeOf(err) != tenancy.CodeTenantSourceInvalid {
			t.Errorf("NewOutgoing with key %q: %v", key, err)
		}
	}
	accepted := []string{"x-tenant-id", "X-Tenant-ID", "x_org", "x.tenant", "t", "tenant-2", "x-tenant-id-binary"}
	for _, key := range accepted {
		tenancytest.RequireWires(t, tenantgrpc.Module(tenantgrpc.Config{TrustedProxy: true, Key: key}))
		if _, err := tenantgrpc.NewOutgoing(key); err != nil {
			t.Errorf("NewOutgoing(%q): %v", key, err)
		}
	}
	// Metadata off: the key is never read.
	tenancytest.RequireWires(t, tenantgrpc.Module(tenantgrpc.Config{KeyOff: true, Key: "x-tenant-id-bin", Claim: claimFrom}))
	// Both refusals at once when both apply.
	_, err := tenantgrpc.NewResolver(tenantgrpc.Config{Key: "grpc-tenant"})
	if codes := tenancy.Codes(err); len(codes) != 2 || codes[0] != tenancy.CodeTenantSourceInvalid || codes[1] != tenancy.CodeTrustedProxyRequired {
		t.Errorf("bad key without a proxy: %v", err)
	}

	// What a real client and server do with each key: a plain server
	// records the metadata each call arrives with.
	var mu sync.Mutex
	var arrived metadata.MD
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		mu.Lock()
		arrived, _ = metadata.FromIncomingContext(ctx)
		mu.Unlock()
		return h(ctx, req)
	}))
	srv.RegisterService(&echoDesc, &echo{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	defer func() { srv.Stop(); <-done }()
	cc := dial(t, l.Addr().String())
	value := tenantA.String()
	carried := func(key string) bool {
		mu.Lock()
		arrived = nil
		mu.Unlock()
		ctx := metadata.NewOutgoingContext(context.Background(), metadata.MD{key: {value}})
		if _, err := callWhoami(ctx, cc); err != nil {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(arrived[strings.ToLower(key)], []string{value})
	}
	for _, key := range accepted {
		if !carried(strings.ToLower(key)) {
			t.Errorf("accepted key %q does not arrive intact", key)
		}
	}
	for _, key := range uncarriedKeys {
		if carried(key) {
			t.Errorf("key %q arrives intact: the refusal's reason is wrong", key)
		}
	}
}

// The trusted-proxy interlock over every combination of sources: the
// metadata key is client-controlled and needs TrustedProxy; a claim alone
// does not, and never lifts the requirement.
func TestTrustedProxyInterlockEveryCombination(t *testing.T) {
	for _, key := range []bool{false, true} {
		for _, claim := range []bool{false, true} {
			for _, proxy := range []bool{false, true} {
				cfg := tenantgrpc.Config{KeyOff: !key, TrustedProxy: proxy}
				if claim {
					cfg.Claim = claimFrom
				}
				name := cfg.Mode() + "/proxy=" + strconv.FormatBool(proxy)
				_, err := tenantgrpc.NewResolver(cfg)
				if key && !proxy {
					if tenancy.CodeOf(err) != tenancy.CodeTrustedProxyRequired {
						t.Errorf("%s: %v, want trusted_proxy_required", name, err)
						continue
					}
					e := tenancytest.RequireRefused(t, tenancy.CodeTrustedProxyRequired, tenantgrpc.Module(cfg))
					if e.Module != "tenantgrpc" || !strings.Contains(e.Detail, "x-tenant-id metadata key") || e.Fix == "" {
						t.Errorf("%s: the refusal does not name the source: %v", name, e)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s refused: %v", name, err)
					continue
				}
				tenancytest.RequireWires(t, tenantgrpc.Module(cfg))
			}
		}
	}
	want := map[string]bool{"default": true, "claim": true, "metadata": true, "claim+metadata": true}
	for _, cfg := range []tenantgrpc.Config{{KeyOff: true}, {KeyOff: true, Claim: claimFrom}, {}, {Claim: claimFrom}} {
		if !want[cfg.Mode()] {
			t.Errorf("mode %q", cfg.Mode())
		}
		delete(want, cfg.Mode())
	}
}
