package pgwire

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSCRAMRFC7677Vector replays the SCRAM-SHA-256 exchange of RFC 7677
// section 3 against the server side.
func TestSCRAMRFC7677Vector(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	v, err := parseSCRAMVerifier(scramVerifierWithSalt("pencil", salt, 4096))
	if err != nil {
		t.Fatal(err)
	}
	s := &scramServer{v: v}
	if _, err := s.first([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")); err != nil {
		t.Fatal(err)
	}
	// Substitute the RFC's server nonce for our random one.
	s.nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	s.serverFirst = "r=" + s.nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	out, err := s.final([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Fatalf("server-final = %q", out)
	}
	// A flipped proof bit fails.
	s2 := &scramServer{v: v, nonce: s.nonce, serverFirst: s.serverFirst, gs2Header: "n,,", clientFirstBare: s.clientFirstBare}
	if _, err := s2.final([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVU=")); err != errSCRAMAuthFailed {
		t.Fatalf("bad proof: %v", err)
	}
	// Malformed messages are errors, not panics.
	for _, m := range []string{"", ",", "p=tls-server-end-point,,n=,r=x", "n,a=b,n=,r=x", "n,,n=", "q,,r=x", "n,,r=a b"} {
		s := &scramServer{v: v}
		if _, err := s.first([]byte(m)); err == nil {
			t.Errorf("client-first %q accepted", m)
		}
	}
}

func TestSCRAMVerifierFormat(t *testing.T) {
	v := NewSCRAMVerifier("secret")
	p, err := parseSCRAMVerifier(v)
	if err != nil || p.iter != 4096 || len(p.salt) != 16 {
		t.Fatalf("verifier %q: %+v %v", v, p, err)
	}
	if NewSCRAMVerifier("secret") == v {
		t.Fatalf("two verifiers share a salt")
	}
	for _, bad := range []string{"", "md5abc", "SCRAM-SHA-256$4096:c2FsdA==$AAAA:AAAA", "SCRAM-SHA-256$x:c2FsdA==$a:b"} {
		if _, err := parseSCRAMVerifier(bad); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
}

func TestSCRAMWithPgx(t *testing.T) {
	eng := newFakeEngine()
	eng.users = map[string]AuthInfo{
		"alice": {SCRAMVerifier: NewSCRAMVerifier("s3cr3t")},
		"root":  {Superuser: true},
	}
	cfg := DefaultConfig()
	ts := startServer(t, cfg, eng)
	host, port, _ := net.SplitHostPort(ts.addr)
	ctx := testCtx(t)
	base := "host=" + host + " port=" + port + " dbname=dev sslmode=disable "
	c, err := pgx.Connect(ctx, base+"user=alice password=s3cr3t")
	if err != nil {
		t.Fatalf("good password: %v", err)
	}
	if c.PgConn().ParameterStatus("is_superuser") != "off" {
		t.Errorf("is_superuser = %q", c.PgConn().ParameterStatus("is_superuser"))
	}
	c.Close(ctx)
	if _, err := pgx.Connect(ctx, base+"user=alice password=wrong"); pgCode(err) != "28P01" {
		t.Fatalf("wrong password: %v; want 28P01", err)
	}
	if _, err := pgx.Connect(ctx, base+"user=bob password=x"); pgCode(err) != "28000" {
		t.Fatalf("unknown user: %v; want 28000", err)
	}
	// Without AuthTrustLoopback a user without a password is refused.
	cfg.AuthTrustLoopback = false
	ts2 := startServer(t, cfg, eng)
	host, port, _ = net.SplitHostPort(ts2.addr)
	base = "host=" + host + " port=" + port + " dbname=dev sslmode=disable "
	if _, err := pgx.Connect(ctx, base+"user=root"); pgCode(err) != "28P01" {
		t.Fatalf("untrusted user without password: %v; want 28P01", err)
	}
	c, err = pgx.Connect(ctx, base+"user=alice password=s3cr3t")
	if err != nil {
		t.Fatalf("SCRAM without trust: %v", err)
	}
	c.Close(ctx)
}

func selfSignedTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

func TestTLS(t *testing.T) {
	eng := newFakeEngine()
	eng.users = map[string]AuthInfo{"alice": {SCRAMVerifier: NewSCRAMVerifier("pw")}, "root": {}}
	cfg := DefaultConfig()
	cfg.TLS = selfSignedTLS(t)
	ts := startServer(t, cfg, eng)
	host, port, _ := net.SplitHostPort(ts.addr)
	ctx := testCtx(t)
	for _, extra := range []string{"user=root sslmode=require", "user=alice password=pw sslmode=require"} {
		c, err := pgx.Connect(ctx, "host="+host+" port="+port+" dbname=dev "+extra)
		if err != nil {
			t.Fatalf("%s: %v", extra, err)
		}
		if _, ok := c.PgConn().Conn().(*tls.Conn); !ok {
			t.Fatalf("%s: connection is %T, not TLS", extra, c.PgConn().Conn())
		}
		var v int32
		if err := c.QueryRow(ctx, "SELECT $1::int4", 9).Scan(&v); err != nil || v != 9 {
			t.Fatalf("over TLS: %d %v", v, err)
		}
		c.Close(ctx)
	}
	// Plain text is still allowed from loopback.
	c, err := pgx.Connect(ctx, "host="+host+" port="+port+" dbname=dev user=root sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	// A server without TLS refuses SSL cleanly: sslmode=prefer falls
	// back, sslmode=require fails.
	ts2 := startServer(t, DefaultConfig(), newFakeEngine())
	host, port, _ = net.SplitHostPort(ts2.addr)
	c, err = pgx.Connect(ctx, "host="+host+" port="+port+" dbname=dev user=root sslmode=prefer")
	if err != nil {
		t.Fatalf("prefer: %v", err)
	}
	c.Close(ctx)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := pgx.Connect(cctx, "host="+host+" port="+port+" dbname=dev user=root sslmode=require"); err == nil {
		t.Fatalf("sslmode=require succeeded against a server without TLS")
	}
}
