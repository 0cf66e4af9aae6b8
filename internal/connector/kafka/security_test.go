package kafka_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// testCA makes a CA and a broker certificate for 127.0.0.1 signed by it;
// it writes the CA's PEM to a file and returns its path and the broker's
// TLS config.
func testCA(t *testing.T) (caPath string, server *tls.Config) {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, srvKey := key(), key()
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "runnel test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caPath = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return caPath, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}}}
}

// TestKafkaSASLAndSSL: a broker (kfake) that takes only TLS connections
// with SASL users, PLAIN and SCRAM-SHA-256. A source over SASL_SSL/PLAIN,
// a table over SASL_SSL/SCRAM-SHA-256 and a sink over SASL_SSL/SCRAM read
// and write it with RisingWave's option names; SHOW CREATE hides the
// password; a wrong password shows as the source retrying; options that
// would be ignored (SASL settings under PLAINTEXT), unknown protocols and
// unsupported mechanisms are refused at CREATE.
func TestKafkaSASLAndSSL(t *testing.T) {
	caPath, srvTLS := testCA(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "secure", "out"), kfake.TLS(srvTLS),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", "alice", "s3cret"), kfake.Superuser("SCRAM-SHA-256", "bob", "pw2"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	pool := x509.NewCertPool()
	pemBytes, _ := os.ReadFile(caPath)
	pool.AppendCertsFromPEM(pemBytes)
	client := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}),
			kgo.SASL(plain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	prod := client(kgo.DefaultProduceTopic("secure"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 1; i <= 3; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf(`{"id": %d, "v": "x%d"}`, i, i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	common := fmt.Sprintf(`topic = 'secure', properties.bootstrap.server = '%s', properties.ssl.ca.location = '%s'`, addr, caPath)
	servertest.Exec(t, conn, `CREATE SOURCE s_plain (id int, v varchar) WITH (`+common+`, connector = 'kafka',
		properties.security.protocol = 'SASL_SSL', properties.sasl.mechanism = 'PLAIN',
		properties.sasl.username = 'alice', properties.sasl.password = 's3cret') FORMAT PLAIN ENCODE JSON`)
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW n_plain AS SELECT count(*) AS n, sum(id) AS s FROM s_plain`)
	servertest.Exec(t, conn, `CREATE TABLE t_scram (id int PRIMARY KEY, v varchar) WITH (`+common+`, connector = 'kafka',
		properties.security.protocol = 'SASL_SSL', properties.sasl.mechanism = 'SCRAM-SHA-256',
		properties.sasl.username = 'bob', properties.sasl.password = 'pw2') FORMAT PLAIN ENCODE JSON`)
	waitRows(t, conn, `SELECT n, s FROM n_plain`, "3|6")
	waitRows(t, conn, `SELECT id, v FROM t_scram ORDER BY id`, "1|x1;2|x2;3|x3")

	servertest.Exec(t, conn, fmt.Sprintf(`CREATE SINK k_out FROM t_scram WITH (connector = 'kafka', topic = 'out',
		properties.bootstrap.server = '%s', properties.ssl.ca.location = '%s', properties.security.protocol = 'SASL_SSL',
		properties.sasl.mechanism = 'SCRAM-SHA-256', properties.sasl.username = 'bob', properties.sasl.password = 'pw2')
		FORMAT PLAIN ENCODE JSON (force_append_only = 'true')`, addr, caPath))
	cons := client(kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 3 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 3 {
		t.Fatalf("sink over SASL_SSL wrote %d records: %v", len(got), got)
	}

	def := strings.Join(servertest.QueryText(t, conn, `SHOW CREATE SOURCE s_plain`), "")
	if strings.Contains(def, "s3cret") || !strings.Contains(def, "[REDACTED]") {
		t.Fatalf("SHOW CREATE SOURCE shows the password: %s", def)
	}

	servertest.Exec(t, conn, `CREATE SOURCE s_wrong (id int) WITH (`+common+`, connector = 'kafka',
		properties.security.protocol = 'SASL_SSL', properties.sasl.username = 'alice', properties.sasl.password = 'nope') FORMAT PLAIN ENCODE JSON`)
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW n_wrong AS SELECT count(*) AS n FROM s_wrong`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := strings.Join(servertest.QueryText(t, conn, `SELECT status FROM rw_catalog.rw_source_stats WHERE name = 's_wrong'`), "")
		if strings.HasPrefix(st, "retrying: ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a wrong password: status %q; want retrying", st)
		}
		time.Sleep(50 * time.Millisecond)
	}

	for _, b := range []struct{ opts, code, text string }{
		{`properties.sasl.username = 'alice'`, "22023", "SASL_PLAINTEXT"},
		{`properties.ssl.ca.location = '` + caPath + `'`, "22023", "'SSL'"},
		{`properties.security.protocol = 'TLS'`, "22023", "TLS"},
		{`properties.security.protocol = 'SASL_SSL', properties.sasl.mechanism = 'GSSAPI', properties.sasl.username = 'a'`, "0A000", "GSSAPI"},
		{`properties.security.protocol = 'SASL_SSL'`, "22023", "username"},
		{`properties.security.protocol = 'SSL', properties.ssl.ca.location = '/nonexistent.pem'`, "22023", "nonexistent"},
	} {
		_, err := conn.Exec(context.Background(), fmt.Sprintf(`CREATE SOURCE bad (id int) WITH (connector = 'kafka', topic = 'secure',
			properties.bootstrap.server = '%s', %s) FORMAT PLAIN ENCODE JSON`, addr, b.opts))
		pe, ok := err.(*pgconn.PgError)
		if !ok || pe.Code != b.code || !strings.Contains(pe.Message, b.text) {
			t.Errorf("%s: %v; want %s naming %s", b.opts, err, b.code, b.text)
		}
	}
}
