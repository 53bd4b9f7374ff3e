package tenantgrpc_test

import (
	"bytes"
	"encoding/base64"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantgrpc"
)

// rawAnswer is what a raw HTTP/2 client got back for one call.
type rawAnswer struct {
	reset   http2.ErrCode // RST_STREAM's code, when the stream was reset
	isReset bool
	status  string // grpc-status
	message string // grpc-message
	value   string // the StringValue answered
}

// rawCall sends one Whoami call over a fresh connection as a hostile
// client would, with header fields written verbatim (no lowercasing, no
// validation, repeats kept), and reads the answer.
func rawCall(t *testing.T, addr string, fields [][2]string) rawAnswer {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range append([][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":path", "/" + echoName + "/Whoami"}, {":authority", addr},
		{"content-type", "application/grpc"}, {"te", "trailers"},
	}, fields...) {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	// One gRPC message: uncompressed, zero length (an empty StringValue).
	if err := fr.WriteData(1, true, []byte{0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	var ans rawAnswer
	var data []byte
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = fr.WritePing(true, f.Data)
			}
		case *http2.DataFrame:
			data = append(data, f.Data()...)
		case *http2.RSTStreamFrame:
			ans.reset, ans.isReset = f.ErrCode, true
			return ans
		case *http2.GoAwayFrame:
			t.Fatalf("the server closed the connection: %v", f.ErrCode)
		case *http2.MetaHeadersFrame:
			for _, hf := range f.Fields {
				switch hf.Name {
				case "grpc-status":
					ans.status = hf.Value
				case "grpc-message":
					ans.message = hf.Value
				}
			}
			if !f.StreamEnded() {
				continue
			}
			if len(data) > 5 {
				var v wrapperspb.StringValue
				if err := proto.Unmarshal(data[5:], &v); err != nil {
					t.Fatal(err)
				}
				ans.value = v.GetValue()
			}
			return ans
		}
	}
}

// TestRawHTTP2Client: a client that is not a gRPC library writes header
// fields verbatim. An upper-case key is malformed HTTP/2: the server
// resets the stream before any handler runs, so it can neither name a
// tenant nor add a second value. Repeated fields of the key are two values
// and refused; a binary key is decoded and never read as the tenant.
func TestRawHTTP2Client(t *testing.T) {
	e := &echo{}
	srv := startApp(t, tenantgrpc.Config{TrustedProxy: true}, tenantgrpc.Service(&echoDesc, e, tenantgrpc.Tenant, echoClasses...))
	a, b := tenantA.String(), tenantB.String()
	bin := tenantB.Bytes()
	ok := strconv.Itoa(int(codes.OK))
	for _, c := range []struct {
		name   string
		fields [][2]string
		want   rawAnswer
		runs   int64
	}{
		{"lower-case key", [][2]string{{"x-tenant-id", a}}, rawAnswer{status: ok, value: a}, 1},
		{"no key", nil, rawAnswer{status: ok, value: tenancy.Default.String()}, 1},
		{"upper-case key", [][2]string{{"X-Tenant-ID", a}}, rawAnswer{isReset: true, reset: http2.ErrCodeProtocol}, 0},
		{"upper-case key beside the lower-case one", [][2]string{{"x-tenant-id", a}, {"X-Tenant-ID", b}}, rawAnswer{isReset: true, reset: http2.ErrCodeProtocol}, 0},
		{"the key twice", [][2]string{{"x-tenant-id", a}, {"x-tenant-id", b}},
			rawAnswer{status: strconv.Itoa(int(codes.InvalidArgument)), message: string(tenancy.CodeInvalidTenantHeader)}, 0},
		{"binary key", [][2]string{{"x-tenant-id-bin", base64.StdEncoding.EncodeToString(bin[:])}}, rawAnswer{status: ok, value: tenancy.Default.String()}, 1},
		{"binary key beside the text key", [][2]string{{"x-tenant-id-bin", base64.StdEncoding.EncodeToString(bin[:])}, {"x-tenant-id", a}},
			rawAnswer{status: ok, value: a}, 1},
		{"binary key that is not base64", [][2]string{{"x-tenant-id-bin", "%%%"}}, rawAnswer{status: strconv.Itoa(int(codes.Internal)), message: "malformed binary metadata"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.calls.Load()
			got := rawCall(t, srv.TenantAddr(), c.fields)
			if got.isReset != c.want.isReset || got.reset != c.want.reset || got.status != c.want.status || got.value != c.want.value ||
				!strings.Contains(got.message, c.want.message) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			if n := e.calls.Load() - before; n != c.runs {
				t.Errorf("the handler ran %d times, want %d", n, c.runs)
			}
		})
	}
}
