package tenantgrpc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// DefaultKey is the tenant metadata key when Config.Key is empty.
const DefaultKey = "x-tenant-id"

// Config configures the gRPC boundary. Its tenant fields mean what
// tenanthttp.Config's do. The zero value is metadata mode on x-tenant-id
// with no trusted proxy asserted, which refuses to boot: the deployment
// must say that a proxy sets the key.
type Config struct {
	// TenantAddr is the tenant listener's address; "" means ":50051".
	TenantAddr string
	// OperatorAddr is the operator listener's address; "" means
	// "127.0.0.1:50052", so operator services stay local unless asked.
	OperatorAddr string

	// Key names the tenant metadata key; "" means x-tenant-id. gRPC keys
	// are case-insensitive and travel lowercased, so "X-Tenant-ID" is
	// x-tenant-id. A key gRPC cannot carry to a handler, a binary key
	// (ending in -bin) or one reserved by gRPC is refused at fx.New with
	// tenant_source_invalid.
	Key string
	// KeyOff turns metadata resolution off (claim only).
	KeyOff bool
	// TrustedProxy asserts that a proxy in front of the tenant listener
	// sets the tenant key and strips the client's. Metadata mode refuses to
	// boot without it.
	TrustedProxy bool
	// Claim reads the tenant claim of the authenticated peer from the
	// call's context (what an authentication interceptor in ServerOptions
	// put there, or peer.FromContext's AuthInfo for mutual TLS); false (or
	// the zero ID) means the call carries none.
	Claim func(context.Context) (tenancy.ID, bool)
	// RequireTenant refuses a call that names no tenant (no claim, no key
	// or a blank one) with InvalidArgument and tenant_required, instead of
	// serving it as the default tenant.
	RequireTenant bool
	// Admission limits each tenant's calls on tenant methods (rate, burst,
	// calls in flight; a stream counts for its whole life), after the
	// tenant is resolved and before the handler: a call over its tenant's
	// limits is answered ResourceExhausted with a google.rpc.RetryInfo
	// detail. It is the HTTP boundary's type: one Admission on both
	// boundaries counts their requests together. Nil admits every call.
	Admission *tenanthttp.Admission

	// ServerOptions configure the tenant server: credentials, limits, and
	// the authentication interceptors (grpc.ChainUnaryInterceptor,
	// grpc.ChainStreamInterceptor), which run before the tenant is
	// resolved so that Claim can read their result.
	ServerOptions []grpc.ServerOption
	// OperatorServerOptions configure the operator server.
	OperatorServerOptions []grpc.ServerOption
}

func (c Config) key() string {
	if c.Key == "" {
		return DefaultKey
	}
	return strings.ToLower(c.Key)
}

func (c Config) tenantAddr() string { return cmp.Or(c.TenantAddr, ":50051") }

func (c Config) operatorAddr() string { return cmp.Or(c.OperatorAddr, "127.0.0.1:50052") }

// Mode names the enabled tenant sources in resolution order, joined by
// "+": "claim+metadata", "metadata", "claim", or "default" when none is
// enabled (every call is the default tenant).
func (c Config) Mode() string {
	var parts []string
	if c.Claim != nil {
		parts = append(parts, "claim")
	}
	if !c.KeyOff {
		parts = append(parts, "metadata")
	}
	if len(parts) == 0 {
		return "default"
	}
	return strings.Join(parts, "+")
}

// check refuses a configuration that cannot resolve tenants as written;
// both refusals are reported when both apply.
func (c Config) check() error {
	var sources []string
	if !c.KeyOff {
		sources = append(sources, "the "+c.key()+" metadata key")
	}
	trust := tenanthttp.TrustInterlock("tenantgrpc", c.TrustedProxy,
		"deploy behind a proxy that sets the metadata key and strips the client's and set Config.TrustedProxy, or set Config.KeyOff and resolve the tenant from the authenticated peer's Claim",
		sources...)
	key := c.checkKey()
	if key == nil || trust == nil {
		return cmp.Or(key, trust)
	}
	return errors.Join(key, trust)
}

// checkKey refuses a tenant key no call can carry to a handler as text:
// every call would silently be the default tenant, or the tenant would be
// bytes no proxy wrote.
func (c Config) checkKey() error {
	if c.KeyOff {
		return nil
	}
	key := c.key()
	why := keyFault(key)
	if why == "" {
		return nil
	}
	return &tenancy.Error{
		Code:   tenancy.CodeTenantSourceInvalid,
		Module: "tenantgrpc",
		Detail: fmt.Sprintf("the tenant metadata key %q %s", key, why),
		Fix:    "set Config.Key to the exact text key your proxy sets, such as x-tenant-id: letters, digits, '-', '_' and '.', not ending in -bin, not starting with grpc-",
	}
}

// keyFault says why a lowercased metadata key cannot carry the tenant, or
// "". gRPC's own rules come first; the key travels as an HTTP/2 header, so
// the HTTP boundary's rule (tenanthttp.HeaderNameFault) applies too.
func keyFault(key string) string {
	const unnamed = ", so no call could name a tenant and every call would be the default tenant"
	switch {
	case !validKey(key):
		return "is not a gRPC metadata key (letters, digits, '-', '_' and '.' only; gRPC clients refuse other keys and HTTP/2 forbids upper case on the wire)" + unnamed
	case strings.HasSuffix(key, "-bin"):
		return "is a binary key: gRPC base64-decodes its values into bytes, so the tenant would not be the text a proxy set or checked, and one tenant would have several spellings"
	case strings.HasPrefix(key, "grpc-"):
		return "is in the grpc- namespace gRPC reserves for itself (it consumes grpc-timeout, grpc-encoding and others before any handler)" + unnamed
	case key == "content-type" || key == "user-agent":
		return "is set by the gRPC library itself: a client's metadata under it is dropped" + unnamed
	}
	if why := tenanthttp.HeaderNameFault(key); why != "" {
		return why + unnamed
	}
	return ""
}

// validKey is gRPC's key grammar: [0-9a-z-_.], at least one character.
func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Class is a method's surface class; it is the HTTP boundary's, so one
// vocabulary covers both. The zero value is unclassified, which refuses
// to boot.
type Class = tenanthttp.Class

const (
	// Tenant methods are served on the tenant listener with the call's
	// tenant bound in its context.
	Tenant = tenanthttp.Tenant
	// Operator methods are served only on the operator listener, with no
	// tenant bound; the tenant listener answers Unimplemented.
	Operator = tenanthttp.Operator
	// Blocked methods are never served: Unimplemented on both listeners.
	Blocked = tenanthttp.Blocked
)

func validClass(c Class) bool { return c == Tenant || c == Operator || c == Blocked }
