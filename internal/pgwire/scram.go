package pgwire

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SCRAM-SHA-256 (RFC 5802 with SHA-256 per RFC 7677), server side, without
// channel binding (we do not advertise SCRAM-SHA-256-PLUS).
//
//	client → n,,n=,r=<cnonce>                 (client-first)
//	server ← r=<cnonce><snonce>,s=<salt>,i=<iter>   (server-first)
//	client → c=biws,r=<nonce>,p=<proof>       (client-final)
//	server ← v=<server signature>             (server-final)
//
// The stored verifier never holds the password: StoredKey = H(ClientKey)
// lets the server check the proof (ClientKey = proof XOR ClientSignature),
// ServerKey lets it prove its own knowledge of the verifier.

const (
	scramMechanism = "SCRAM-SHA-256"
	// scramIterations matches PostgreSQL's default scram_iterations.
	scramIterations = 4096
	scramSaltLen    = 16
	scramNonceLen   = 18
)

// NewSCRAMVerifier returns the SCRAM-SHA-256 verifier of password in
// PostgreSQL's pg_authid format:
// SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> (base64).
// The password is used as given (PostgreSQL applies SASLprep, which leaves
// ASCII passwords unchanged).
func NewSCRAMVerifier(password string) string {
	salt := make([]byte, scramSaltLen)
	if _, err := rand.Read(salt); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // crypto/rand never fails on supported platforms
	}
	return scramVerifierWithSalt(password, salt, scramIterations)
}

func scramVerifierWithSalt(password string, salt []byte, iter int) string {
	storedKey, serverKey := scramKeys(password, salt, iter)
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("%s$%d:%s$%s:%s", scramMechanism, iter, b64(salt), b64(storedKey), b64(serverKey))
}

func scramKeys(password string, salt []byte, iter int) (storedKey, serverKey []byte) {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iter, sha256.Size)
	if err != nil {
		panic(fmt.Sprintf("pbkdf2: %v", err)) // only for invalid parameters, which are constants here
	}
	clientKey := hmacSHA256(salted, []byte("Client Key"))
	sk := sha256.Sum256(clientKey)
	return sk[:], hmacSHA256(salted, []byte("Server Key"))
}

func hmacSHA256(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

// CheckSCRAMPassword reports whether password matches the stored
// verifier (for protocols that receive the password itself, such as
// MySQL's mysql_clear_password). A malformed verifier matches nothing.
func CheckSCRAMPassword(verifier, password string) bool {
	v, err := parseSCRAMVerifier(verifier)
	if err != nil {
		return false
	}
	storedKey, _ := scramKeys(password, v.salt, v.iter)
	return hmac.Equal(storedKey, v.storedKey)
}

// scramVerifier is a parsed stored verifier.
type scramVerifier struct {
	iter      int
	salt      []byte
	storedKey []byte
	serverKey []byte
}

var errBadVerifier = errors.New("invalid SCRAM-SHA-256 verifier")

func parseSCRAMVerifier(s string) (*scramVerifier, error) {
	parts := strings.Split(s, "$")
	if len(parts) != 3 || parts[0] != scramMechanism {
		return nil, errBadVerifier
	}
	iterSalt := strings.SplitN(parts[1], ":", 2)
	keys := strings.SplitN(parts[2], ":", 2)
	if len(iterSalt) != 2 || len(keys) != 2 {
		return nil, errBadVerifier
	}
	iter, err := strconv.Atoi(iterSalt[0])
	if err != nil || iter < 1 {
		return nil, errBadVerifier
	}
	v := &scramVerifier{iter: iter}
	dec := base64.StdEncoding.DecodeString
	if v.salt, err = dec(iterSalt[1]); err != nil {
		return nil, errBadVerifier
	}
	if v.storedKey, err = dec(keys[0]); err != nil || len(v.storedKey) != sha256.Size {
		return nil, errBadVerifier
	}
	if v.serverKey, err = dec(keys[1]); err != nil || len(v.serverKey) != sha256.Size {
		return nil, errBadVerifier
	}
	return v, nil
}

// scramServer runs one SCRAM exchange. Its methods return a protocol error
// for malformed messages and errSCRAMAuthFailed for a wrong proof.
type scramServer struct {
	v               *scramVerifier
	gs2Header       string
	clientFirstBare string
	serverFirst     string
	nonce           string
}

var errSCRAMAuthFailed = errors.New("SCRAM proof does not match")

// first consumes client-first-message and returns server-first-message.
func (s *scramServer) first(msg []byte) ([]byte, error) {
	m := string(msg)
	// gs2-header: cbind-flag "," [authzid] ","
	i := strings.IndexByte(m, ',')
	if i < 0 {
		return nil, errors.New("malformed SCRAM client-first-message")
	}
	switch m[:i] {
	case "n", "y":
	default:
		if strings.HasPrefix(m, "p=") {
			return nil, errors.New("SCRAM channel binding was requested but is not supported")
		}
		return nil, errors.New("malformed SCRAM client-first-message: bad channel binding flag")
	}
	j := strings.IndexByte(m[i+1:], ',')
	if j < 0 {
		return nil, errors.New("malformed SCRAM client-first-message")
	}
	if m[i+1:i+1+j] != "" {
		return nil, errors.New("SCRAM authorization identity is not supported")
	}
	s.gs2Header = m[:i+1+j+1]
	s.clientFirstBare = m[len(s.gs2Header):]
	var cnonce string
	for _, attr := range strings.Split(s.clientFirstBare, ",") {
		if strings.HasPrefix(attr, "r=") {
			cnonce = attr[2:]
		} else if strings.HasPrefix(attr, "m=") {
			return nil, errors.New("SCRAM extensions are not supported")
		}
	}
	if cnonce == "" || !printableNonce(cnonce) {
		return nil, errors.New("malformed SCRAM client-first-message: missing nonce")
	}
	raw := make([]byte, scramNonceLen)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generating SCRAM nonce: %w", err)
	}
	s.nonce = cnonce + base64.StdEncoding.EncodeToString(raw)
	s.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", s.nonce, base64.StdEncoding.EncodeToString(s.v.salt), s.v.iter)
	return []byte(s.serverFirst), nil
}

func printableNonce(n string) bool {
	for i := 0; i < len(n); i++ {
		if n[i] < 0x21 || n[i] > 0x7e || n[i] == ',' {
			return false
		}
	}
	return true
}

// final consumes client-final-message and returns server-final-message.
func (s *scramServer) final(msg []byte) ([]byte, error) {
	m := string(msg)
	k := strings.LastIndex(m, ",p=")
	if k < 0 {
		return nil, errors.New("malformed SCRAM client-final-message: missing proof")
	}
	withoutProof := m[:k]
	proof, err := base64.StdEncoding.DecodeString(m[k+3:])
	if err != nil || len(proof) != sha256.Size {
		return nil, errors.New("malformed SCRAM client-final-message: bad proof")
	}
	var cb, nonce string
	for _, attr := range strings.Split(withoutProof, ",") {
		switch {
		case strings.HasPrefix(attr, "c="):
			cb = attr[2:]
		case strings.HasPrefix(attr, "r="):
			nonce = attr[2:]
		}
	}
	if cb != base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) {
		return nil, errors.New("SCRAM channel binding check failed")
	}
	if nonce != s.nonce {
		return nil, errors.New("SCRAM nonce mismatch")
	}
	authMsg := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	clientSig := hmacSHA256(s.v.storedKey, authMsg)
	clientKey := make([]byte, sha256.Size)
	subtle.XORBytes(clientKey, proof, clientSig)
	got := sha256.Sum256(clientKey)
	if subtle.ConstantTimeCompare(got[:], s.v.storedKey) != 1 {
		return nil, errSCRAMAuthFailed
	}
	var out bytes.Buffer
	out.WriteString("v=")
	out.WriteString(base64.StdEncoding.EncodeToString(hmacSHA256(s.v.serverKey, authMsg)))
	return out.Bytes(), nil
}
