package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// report prints what an operator sees: readiness, the route series on
// /metrics, the spans of the first request, and the log lines.
func report(ctx context.Context, out io.Writer, c *http.Client, srv *tenanthttp.Server, rec *tracetest.SpanRecorder, logs string) error {
	op := "http://" + srv.OperatorAddr()
	get := func(path string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", op+path, nil)
		if err != nil {
			return 0, "", err
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	status, body, err := get("/readyz")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nGET /readyz -> %d %s\n", status, strings.TrimSpace(body))

	_, body, err = get("/metrics")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nGET /metrics (route calls):")
	sc := bufio.NewScanner(strings.NewReader(body))
	var calls []string
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "tenantwire_route_duration_seconds_count") {
			calls = append(calls, "  "+l)
		}
	}
	slices.Sort(calls)
	fmt.Fprintln(out, strings.Join(calls, "\n"))

	fmt.Fprintln(out, "\nSpans of the first request (tenant hashed):")
	spans := rec.Ended()
	if len(spans) == 0 {
		return fmt.Errorf("no spans were recorded")
	}
	var first string
	for _, s := range spans {
		if s.Name() == "PUT /orders/{id}" {
			first = s.SpanContext().TraceID().String()
			break
		}
	}
	for _, s := range spans {
		if s.SpanContext().TraceID().String() != first {
			continue
		}
		var tenant string
		for _, kv := range s.Attributes() {
			if kv.Key == telemetry.AttrTenant {
				tenant = kv.Value.AsString()
			}
		}
		fmt.Fprintf(out, "  %-20s %-7s tenant=%s\n", s.Name(), s.SpanKind(), tenant)
	}

	fmt.Fprintln(out, "\nLog lines:")
	for l := range strings.Lines(logs) {
		if strings.Contains(l, "order created") {
			fmt.Fprint(out, "  ", l)
		}
	}
	return nil
}
