package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// Security options, as RisingWave (and librdkafka) name them, for Kafka
// sources, tables and sinks alike:
//
//	properties.security.protocol = PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
//	properties.sasl.mechanism    = PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
//	properties.sasl.username, properties.sasl.password
//	properties.ssl.ca.location          (PEM file of the CAs to trust;
//	                                      default: the system's)
//	properties.ssl.certificate.location, properties.ssl.key.location
//	                                     (PEM client certificate and key)
//	properties.ssl.endpoint.identification.algorithm = https (default) | none
//	                                     (none: the chain is verified, not
//	                                      the broker's host name)
//
// Options that would be silently ignored are refused instead: a SASL or
// SSL option under a protocol that does not use it would otherwise send
// credentials nowhere and connect in the clear.

// ClientSecurity returns the franz-go options of the security options in
// o (WITH options, lower-cased keys); what names the object in errors.
func ClientSecurity(what string, o map[string]string) ([]kgo.Opt, error) {
	bad := func(key, format string, args ...any) error {
		return sqlerr.Errorf(sqlerr.InvalidParameterValue, "%s: kafka option %s: %s", what, key, fmt.Sprintf(format, args...))
	}
	proto := strings.ToUpper(strings.TrimSpace(o["properties.security.protocol"]))
	if proto == "" {
		proto = "PLAINTEXT"
	}
	var useTLS, useSASL bool
	switch proto {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, bad("properties.security.protocol", "%q is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", o["properties.security.protocol"])
	}
	for k := range o {
		switch {
		case strings.HasPrefix(k, "properties.sasl.") && !useSASL:
			return nil, bad(k, "needs properties.security.protocol = 'SASL_PLAINTEXT' or 'SASL_SSL' (it is %s)", proto)
		case strings.HasPrefix(k, "properties.ssl.") && !useTLS:
			return nil, bad(k, "needs properties.security.protocol = 'SSL' or 'SASL_SSL' (it is %s)", proto)
		}
	}
	var opts []kgo.Opt
	if useTLS {
		cfg, err := tlsConfig(o, bad)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if useSASL {
		user, pass := o["properties.sasl.username"], o["properties.sasl.password"]
		if user == "" {
			return nil, bad("properties.sasl.username", "is required with %s", proto)
		}
		mech := strings.ToUpper(strings.TrimSpace(o["properties.sasl.mechanism"]))
		switch mech {
		case "", "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		case "GSSAPI", "OAUTHBEARER", "AWS_MSK_IAM":
			return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "%s: kafka option properties.sasl.mechanism: %s is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", what, mech)
		default:
			return nil, bad("properties.sasl.mechanism", "%q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", o["properties.sasl.mechanism"])
		}
	}
	return opts, nil
}

func tlsConfig(o map[string]string, bad func(key, format string, args ...any) error) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	var roots *x509.CertPool
	if path := o["properties.ssl.ca.location"]; path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, bad("properties.ssl.ca.location", "%v", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, bad("properties.ssl.ca.location", "%s holds no PEM certificate", path)
		}
		cfg.RootCAs = roots
	}
	certPath, keyPath := o["properties.ssl.certificate.location"], o["properties.ssl.key.location"]
	if (certPath == "") != (keyPath == "") {
		return nil, bad("properties.ssl.certificate.location", "and properties.ssl.key.location go together")
	}
	if o["properties.ssl.key.password"] != "" {
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "kafka option properties.ssl.key.password: encrypted private keys are not supported; give an unencrypted PEM key")
	}
	if certPath != "" {
		pair, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, bad("properties.ssl.certificate.location", "%v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	switch alg := strings.ToLower(o["properties.ssl.endpoint.identification.algorithm"]); alg {
	case "", "https":
	case "none":
		// Verify the chain against the roots, not the host name (a broker
		// reached by an address its certificate does not list).
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("kafka: the broker sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	default:
		return nil, bad("properties.ssl.endpoint.identification.algorithm", "%q is not https or none", alg)
	}
	return cfg, nil
}
