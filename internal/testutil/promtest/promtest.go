// Package promtest runs a real Prometheus server for tests: Debian's
// package (scripts/install-deps.sh installs it), on a free loopback port
// with its data in a temporary directory, killed when the test ends.
//
// Missing binary: with CI=true the test fails naming
// scripts/install-deps.sh; elsewhere it is skipped.
package promtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// Binary returns the path of prometheus, or skips the test (fails it in
// CI).
func Binary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus not installed: run scripts/install-deps.sh")
		}
		t.Skip("prometheus not installed (scripts/install-deps.sh installs Debian's package)")
	}
	return p
}

// Start runs Prometheus with config (a prometheus.yml) and returns its
// base URL once /-/ready answers.
func Start(t testing.TB, config string) string {
	t.Helper()
	return StartWith(t, Options{Config: config})
}

// Options configure StartWith.
type Options struct {
	Config string // prometheus.yml
	// DataDir is the TSDB directory to open (blocks promtool made);
	// empty: a fresh one in a temporary directory.
	DataDir string
	Flags   []string // more command-line flags
}

// StartWith runs Prometheus as o says and returns its base URL once
// /-/ready answers.
func StartWith(t testing.TB, o Options) string {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(o.Config), 0o644); err != nil {
		t.Fatal(err)
	}
	data := o.DataDir
	if data == "" {
		data = filepath.Join(dir, "data")
	}
	addr := servertest.FreeAddr(t)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--config.file=" + cfg, "--storage.tsdb.path=" + data,
		"--web.listen-address=" + addr, "--log.level=warn"}, o.Flags...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("prometheus not ready after 30s:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Sample is one series of an instant vector.
type Sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// Float is the sample's value.
func (s Sample) Float() float64 {
	str, _ := s.Value[1].(string)
	var f float64
	fmt.Sscan(str, &f)
	return f
}

// Query runs an instant PromQL query through the HTTP API
// (/api/v1/query) and returns its vector.
func Query(base, promql string) ([]Sample, error) {
	resp, err := http.Get(base + "/api/v1/query?" + url.Values{"query": {promql}}.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string   `json:"resultType"`
			Result     []Sample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("query %s: %w", promql, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", promql, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %s; want vector", promql, r.Data.ResultType)
	}
	return r.Data.Result, nil
}
