package tenantotel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestPrometheusServerScrapesTheOperatorListener: a real Prometheus server
// (Debian's package; scripts/prometheus.sh installs it) scrapes the
// operator listener, and a PromQL query over its HTTP API returns the
// route's call count.
func TestPrometheusServerScrapesTheOperatorListener(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if testsvc.Required() {
			t.Fatal("no prometheus binary: run scripts/services.sh (it installs Debian's prometheus package)")
		}
		t.Skip("no prometheus binary (scripts/prometheus.sh installs it)")
	}
	srv, cache := memoryApp(t, tracetest.NewSpanRecorder(), telemetry.Config{})
	ctx := tenancy.WithTenant(context.Background(), tenantA)
	const calls = 3
	for range calls {
		if _, _, err := cache.Get(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	// Prometheus sends the target as the Host, 127.0.0.1:<port>: a name
	// the operator listener answers by default, so the scrape is served.
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: tenantwire\n    metrics_path: /metrics\n    static_configs:\n      - targets: [%q]\n", srv.OperatorAddr())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", b)
		}
	})

	q := `sum(tenantwire_route_duration_seconds_count{module="sessions",route="session"})`
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		v, err := promQL(addr, q)
		if err == nil && v == fmt.Sprint(calls) {
			return
		}
		last = fmt.Sprintf("%q, %v", v, err)
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("PromQL %s never returned %d: last %s", q, calls, last)
}

// promQL runs an instant query and returns its one sample's value.
func promQL(addr, q string) (string, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", err
	}
	if body.Status != "success" || len(body.Data.Result) != 1 {
		return "", fmt.Errorf("status %s, %d results", body.Status, len(body.Data.Result))
	}
	v, _ := body.Data.Result[0].Value[1].(string)
	return v, nil
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
