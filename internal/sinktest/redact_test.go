package sinktest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/runneldb/runnel/internal/testutil/s3test"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestSecretsRedacted: passwords and secrets given to sinks and sources
// (password, a password inside jdbc.url, s3.credentials.secret,
// properties.sasl.password) do not appear in SHOW CREATE SINK, SHOW CREATE
// SOURCE or the definitions of rw_catalog.rw_sinks and rw_sources, which
// show [REDACTED] instead; the connectors still have them: the S3 sink,
// which versitygw authenticates with that secret, delivers its rows.
func TestSecretsRedacted(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s3 := s3test.Start(t)
	bucket := s3.NewBucket(t)
	target, pg := targetDB(t)
	mustExec(t, pg, "CREATE TABLE ev (id int, v int)")
	secrets := []string{"opt-secret-1", "url-secret-2", s3.SecretKey, "sasl-secret-4"}

	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE ev (id int, v int) APPEND ONLY")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK pg_sink FROM ev WITH (connector = 'jdbc', jdbc.url = '%s&password=%s',
		password = '%s', table.name = 'ev', type = 'append-only')`, jdbcURL(t, target), secrets[1], secrets[0]))
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK s3_sink FROM ev WITH (connector = 's3', s3.region_name = '%s', s3.bucket_name = '%s',
		s3.path = 'ev', s3.credentials.access = '%s', s3.credentials.secret = '%s', s3.endpoint_url = 'http://%s',
		type = 'append-only') FORMAT PLAIN ENCODE PARQUET`, s3.Region, bucket, s3.AccessKey, s3.SecretKey, s3.Endpoint))
	mustExec(t, rw, fmt.Sprintf(`CREATE SOURCE src (id int, v int) WITH (connector = 'kafka', topic = 'in',
		properties.bootstrap.server = '%s', properties.security.protocol = 'SASL_PLAINTEXT', properties.sasl.username = 'u',
		properties.sasl.password = '%s') FORMAT PLAIN ENCODE JSON`, c.ListenAddrs()[0], secrets[3]))

	var shown []string
	for _, q := range []string{"SHOW CREATE SINK pg_sink", "SHOW CREATE SINK s3_sink", "SHOW CREATE SOURCE src",
		"SELECT definition FROM rw_catalog.rw_sinks", "SELECT definition FROM rw_catalog.rw_sources"} {
		rows := rowsOf(t, rw, q)
		text := strings.Join(rows, "\n")
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the secret %q:\n%s", q, s, text)
			}
		}
		if !strings.Contains(text, "[REDACTED]") {
			t.Errorf("%s shows no [REDACTED]:\n%s", q, text)
		}
		shown = append(shown, text)
	}
	for _, want := range []string{"password = '[REDACTED]'", "password=[REDACTED]", "s3.credentials.secret = '[REDACTED]'",
		"properties.sasl.password = '[REDACTED]'", fmt.Sprintf("s3.credentials.access = '%s'", s3.AccessKey)} {
		if !strings.Contains(strings.Join(shown, "\n"), want) {
			t.Errorf("definitions lack %q:\n%s", want, strings.Join(shown, "\n"))
		}
	}

	mustExec(t, rw, "INSERT INTO ev SELECT i, i FROM generate_series(1, 50) g(i)")
	mustExec(t, rw, "FLUSH")
	waitEqual(t, rw, pg, "SELECT id, v FROM ev", "SELECT id, v FROM ev", 20*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, rows := s3Files(t, s3, bucket, "ev"); len(rows) == 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the s3 sink did not deliver: %v", rowsOf(t, rw, "SELECT name, status, last_error FROM rw_catalog.rw_sinks"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
