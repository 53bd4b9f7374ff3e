package tenantgrpc_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantgrpc"
)

// hostileCall is what a client sends: metadata built the way the case
// says, and a bearer token (the authenticated peer's claim) or none.
type hostileCall struct {
	name  string
	md    metadata.MD
	claim tenancy.ID
	want  tenancy.ID // the tenant the handler sees
	// A refusal instead: the status code and the tenantwire code.
	code   codes.Code
	reason tenancy.Code
	// required is the outcome when the boundary requires a tenant, if it
	// differs (a call that names none).
	required bool
}

// TestHostileMetadata sends every case over loopback to a real server,
// as a unary call and as a stream, with and without RequireTenant: the
// handler sees the tenant the case names, or never runs and the client
// gets the status code and the tenantwire code of the refusal.
func TestHostileMetadata(t *testing.T) {
	a, b := tenantA.String(), tenantB.String()
	binB := tenantB.Bytes()
	refused := func(name string, md metadata.MD, claim tenancy.ID, code codes.Code, reason tenancy.Code) hostileCall {
		return hostileCall{name: name, md: md, claim: claim, code: code, reason: reason}
	}
	invalid := func(name string, md metadata.MD) hostileCall {
		return refused(name, md, tenancy.ID{}, codes.InvalidArgument, tenancy.CodeInvalidTenantHeader)
	}
	cases := []hostileCall{
		{name: "one value", md: metadata.Pairs("x-tenant-id", a), want: tenantA},
		// metadata.Pairs lowercases keys, as gRPC requires: an upper-case
		// key is the same key.
		{name: "upper-case key", md: metadata.Pairs("X-Tenant-ID", a), want: tenantA},
		{name: "upper-case id", md: metadata.Pairs("x-tenant-id", strings.ToUpper(a)), want: tenantA},
		invalid("two values", metadata.Pairs("x-tenant-id", a, "x-tenant-id", b)),
		// Two spellings of the key are one key with two values after
		// lowercasing: refused, never resolved to either.
		invalid("two spellings of the key", metadata.Pairs("X-Tenant-ID", a, "x-tenant-id", b)),
		invalid("the same tenant twice", metadata.Pairs("x-tenant-id", a, "X-TENANT-ID", a)),
		invalid("comma-joined values", metadata.Pairs("x-tenant-id", a+","+b)),
		invalid("malformed", metadata.Pairs("x-tenant-id", "not-a-uuid")),
		invalid("braces", metadata.Pairs("x-tenant-id", "{"+a+"}")),
		invalid("urn prefix", metadata.Pairs("x-tenant-id", "urn:uuid:"+a)),
		invalid("surrounding spaces", metadata.Pairs("x-tenant-id", " "+a+" ")),
		invalid("nil uuid", metadata.Pairs("x-tenant-id", "00000000-0000-0000-0000-000000000000")),
		invalid("dash misplaced", metadata.Pairs("x-tenant-id", a[:7]+"-"+a[7:8]+a[9:])),
		// A binary key is another key: its decoded bytes are never read as
		// the tenant, alone or beside the text key.
		{name: "binary key only", md: metadata.Pairs("x-tenant-id-bin", string(binB[:])), want: tenancy.Default, required: true},
		{name: "binary key holding text", md: metadata.Pairs("x-tenant-id-bin", b), want: tenancy.Default, required: true},
		{name: "binary key beside the text key", md: metadata.Pairs("x-tenant-id-bin", b, "x-tenant-id", a), want: tenantA},
		{name: "no metadata", want: tenancy.Default, required: true},
		{name: "blank value", md: metadata.Pairs("x-tenant-id", "   "), want: tenancy.Default, required: true},
		{name: "another key name", md: metadata.Pairs("x-tenant", b), want: tenancy.Default, required: true},
		{name: "claim only", claim: tenantB, want: tenantB},
		{name: "claim and key agree", md: metadata.Pairs("x-tenant-id", a), claim: tenantA, want: tenantA},
		{name: "blank key defers to the claim", md: metadata.Pairs("x-tenant-id", ""), claim: tenantB, want: tenantB},
		refused("claim vs key", metadata.Pairs("x-tenant-id", b), tenantA, codes.PermissionDenied, tenancy.CodeTenantSourceConflict),
		refused("malformed key beats the claim", metadata.Pairs("x-tenant-id", "x"), tenantA, codes.InvalidArgument, tenancy.CodeInvalidTenantHeader),
	}
	for _, require := range []bool{false, true} {
		e := &echo{}
		srv := startApp(t, tenantgrpc.Config{TrustedProxy: true, Claim: claimFrom, RequireTenant: require, ServerOptions: authOptions()},
			tenantgrpc.Service(&echoDesc, e, tenantgrpc.Tenant, echoClasses...))
		cc := dial(t, srv.TenantAddr())
		for _, c := range cases {
			if require && c.required {
				c.code, c.reason = codes.InvalidArgument, tenancy.CodeTenantRequired
			}
			md := c.md.Copy()
			if md == nil {
				md = metadata.MD{}
			}
			if !c.claim.IsZero() {
				md.Append("authorization", "Bearer "+c.claim.String())
			}
			ctx := metadata.NewOutgoingContext(context.Background(), md)
			name := c.name
			if require {
				name += "/require"
			}
			t.Run(name+"/unary", func(t *testing.T) {
				before := e.calls.Load()
				got, err := callWhoami(ctx, cc)
				checkOutcome(t, c, []string{got}, err, e.calls.Load()-before)
			})
			t.Run(name+"/stream", func(t *testing.T) {
				before := e.calls.Load()
				got, err := callWatch(ctx, cc)
				checkOutcome(t, c, got, err, e.calls.Load()-before)
			})
		}
	}
}

func checkOutcome(t *testing.T, c hostileCall, got []string, err error, ran int64) {
	t.Helper()
	if c.reason != "" {
		if status.Code(err) != c.code || tenantgrpc.CodeOf(err) != c.reason {
			t.Fatalf("got %v, %v; want %v with %s", got, err, c.code, c.reason)
		}
		if !strings.Contains(status.Convert(err).Message(), string(c.reason)) {
			t.Errorf("the status message does not name the code: %q", status.Convert(err).Message())
		}
		if ran != 0 {
			t.Errorf("the handler ran %d times on a refused call", ran)
		}
		return
	}
	if err != nil {
		t.Fatalf("refused: %v; want %v", err, c.want)
	}
	for _, g := range got {
		if g != c.want.String() {
			t.Fatalf("handler saw %q, want %v", got, c.want)
		}
	}
	if len(got) == 0 || ran != 1 {
		t.Fatalf("got %q after %d handler runs", got, ran)
	}
}

// TestUpperCaseKeyNeverLeavesGoClient: a metadata map written by hand
// with an upper-case key (no lowercasing helper) is refused by the gRPC
// client itself before anything is sent; HTTP/2 forbids upper case on the
// wire. (A non-Go client sending one anyway: TestRawHTTP2Client.)
func TestUpperCaseKeyNeverLeavesGoClient(t *testing.T) {
	e := &echo{}
	srv := startApp(t, tenantgrpc.Config{TrustedProxy: true}, tenantgrpc.Service(&echoDesc, e, tenantgrpc.Tenant, echoClasses...))
	cc := dial(t, srv.TenantAddr())
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.MD{"X-Tenant-ID": {tenantA.String()}})
	_, err := callWhoami(ctx, cc)
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "illegal characters") || e.calls.Load() != 0 {
		t.Fatalf("got %v after %d handler runs; want the client's own refusal", err, e.calls.Load())
	}
}
