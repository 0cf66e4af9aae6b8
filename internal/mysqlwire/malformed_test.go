package mysqlwire_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawConn speaks MySQL packets by hand, so that tests can send what no
// driver would.
type rawConn struct {
	t   *testing.T
	nc  net.Conn
	seq byte
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	c := &rawConn{t: t, nc: nc}
	if _, err := c.read(); err != nil { // the greeting
		t.Fatalf("read greeting: %v", err)
	}
	return c
}

func (c *rawConn) send(payload []byte) error {
	hdr := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), c.seq}
	c.seq++
	_, err := c.nc.Write(append(hdr, payload...))
	return err
}

func (c *rawConn) read() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return nil, err
	}
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	c.seq = hdr[3] + 1
	b := make([]byte, n)
	_, err := io.ReadFull(c.nc, b)
	return b, err
}

// login sends a well-formed HandshakeResponse41 for root and expects OK.
func (c *rawConn) login() {
	c.t.Helper()
	caps := uint32(0x200 | 0x8000 | 0x80000) // PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH
	p := binary.LittleEndian.AppendUint32(nil, caps)
	p = binary.LittleEndian.AppendUint32(p, 1<<24)
	p = append(p, 45)
	p = append(p, make([]byte, 23)...)
	p = append(p, "root\x00"...)
	p = append(p, 0)
	p = append(p, "mysql_native_password\x00"...)
	if err := c.send(p); err != nil {
		c.t.Fatal(err)
	}
	resp, err := c.read()
	if err != nil || len(resp) == 0 || resp[0] != 0 {
		c.t.Fatalf("login: %q, %v; want OK", resp, err)
	}
}

// command sends one command packet (sequence 0) and reads the first
// packet of the answer.
func (c *rawConn) command(payload []byte) ([]byte, error) {
	c.seq = 0
	if err := c.send(payload); err != nil {
		return nil, err
	}
	return c.read()
}

// wantErr checks that the answer is an ERR packet with the given number.
func wantErr(t *testing.T, what string, resp []byte, err error, number uint16) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v; want ERR %d", what, err, number)
	}
	if len(resp) < 9 || resp[0] != 0xff || binary.LittleEndian.Uint16(resp[1:]) != number {
		t.Fatalf("%s: answer %q; want ERR %d", what, resp, number)
	}
}

// TestMalformedPackets sends what no driver sends: broken handshakes,
// truncated and unknown commands, statement ids that do not exist,
// out-of-order sequence ids, then a seeded stream of random commands. Each
// ends at most its own connection with an ERR packet; the server keeps
// serving and never logs a panic (I9).
func TestMalformedPackets(t *testing.T) {
	_, addr, logs := start(t)

	// Handshake responses that are cut short or lie about lengths.
	for i, p := range [][]byte{
		{},
		{0x00, 0x02},
		append(binary.LittleEndian.AppendUint32(nil, 0x200|0x200000), make([]byte, 28)...),                                        // lenenc auth, nothing after
		append(append(binary.LittleEndian.AppendUint32(nil, 0x200|0x200000), make([]byte, 28)...), "r\x00\xfe\xff"...),            // 8-byte length, truncated
		append(append(binary.LittleEndian.AppendUint32(nil, 0x200|0x8000), make([]byte, 28)...), "r\x00\xff"...),                  // auth length past the end
		append(append(binary.LittleEndian.AppendUint32(nil, 0x200|0x100000), make([]byte, 28)...), "root\x00\x00\xfc\xff\xff"...), // attrs past the end
		binary.LittleEndian.AppendUint32(nil, 0x200|0x800),                                                                        // asks for SSL, which was not offered
	} {
		c := dialRaw(t, addr)
		if err := c.send(p); err != nil {
			t.Fatal(err)
		}
		resp, err := c.read()
		if err == nil && (len(resp) == 0 || resp[0] != 0xff) {
			t.Fatalf("handshake %d: answer %q; want ERR or close", i, resp)
		}
	}

	c := dialRaw(t, addr)
	c.login()
	resp, err := c.command([]byte{0x17, 1, 2}) // COM_STMT_EXECUTE cut short
	wantErr(t, "short COM_STMT_EXECUTE", resp, err, 1158)
	resp, err = c.command([]byte{0x17, 99, 0, 0, 0, 0, 1, 0, 0, 0}) // no such statement
	wantErr(t, "unknown statement", resp, err, 1243)
	resp, err = c.command([]byte{0x16, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '?'}) // PREPARE SELECT ?
	if err != nil || len(resp) == 0 || resp[0] != 0 {
		t.Fatalf("prepare: %q, %v", resp, err)
	}
	for eofs := 0; eofs < 2; { // parameter and column definitions, each ending with EOF
		b, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		if b[0] == 0xfe && len(b) < 9 {
			eofs++
		}
	}
	id := binary.LittleEndian.Uint32(resp[1:])
	exec := binary.LittleEndian.AppendUint32([]byte{0x17}, id)
	exec = append(exec, 0, 1, 0, 0, 0)
	resp, err = c.command(append(exec, 0, 0)) // no types bound, ever
	wantErr(t, "execute without types", resp, err, 1158)
	resp, err = c.command(append(exec, 0, 1, 0xfd, 0, 0xfc, 0xff)) // a string parameter longer than the packet
	wantErr(t, "truncated parameter", resp, err, 1158)
	resp, err = c.command([]byte{0x7f})
	wantErr(t, "unknown command", resp, err, 1047)
	resp, err = c.command([]byte{0x03, '\''})
	wantErr(t, "unterminated string", resp, err, 1064)
	resp, err = c.command([]byte{0x0e}) // still usable: COM_PING
	if err != nil || len(resp) == 0 || resp[0] != 0 {
		t.Fatalf("ping after errors: %q, %v", resp, err)
	}
	c.seq = 5 // a packet out of sequence ends the connection
	if err := c.send([]byte{0x0e}); err != nil {
		t.Fatal(err)
	}
	resp, err = c.read()
	wantErr(t, "out of sequence", resp, err, 1158)

	// A seeded stream of random commands, each a valid packet around a
	// random body.
	seed := int64(time.Now().UnixNano() % 1_000_000_000)
	if v, err := strconv.ParseInt(os.Getenv("RUNNEL_TEST_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (RUNNEL_TEST_SEED=%d replays)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	cmds := []byte{0x02, 0x03, 0x04, 0x0e, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1f, 0x00, 0x42}
	c = dialRaw(t, addr)
	c.login()
	for i := 0; i < 300; i++ {
		body := make([]byte, rng.Intn(48))
		rng.Read(body)
		if rng.Intn(2) == 0 { // a mostly-valid statement id or query text
			copy(body, []byte{1, 0, 0, 0})
		}
		cmd := cmds[rng.Intn(len(cmds))]
		c.seq = 0
		if err := c.send(append([]byte{cmd}, body...)); err != nil {
			c = dialRaw(t, addr)
			c.login()
			continue
		}
		if cmd == 0x18 || cmd == 0x19 { // no answer by design
			continue
		}
		_ = c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		if err := c.drain(cmd); err != nil {
			c = dialRaw(t, addr)
			c.login()
		}
	}
	// The server still serves.
	db := openDB(t, fmt.Sprintf("root@tcp(%s)/", addr))
	var n int
	if err := db.QueryRow("SELECT 41 + 1").Scan(&n); err != nil || n != 42 {
		t.Fatalf("after the random commands: %d, %v", n, err)
	}
	if strings.Contains(logs.String(), "panic") {
		t.Fatalf("server log has a panic:\n%s", logs.String())
	}
}

// drain reads the whole answer to a command: ERR, OK, EOF, a prepare
// response with its definitions, or a result set.
func (c *rawConn) drain(cmd byte) error {
	b, err := c.read()
	if err != nil {
		return err
	}
	defs := 0
	switch {
	case b[0] == 0xff || b[0] == 0xfe:
		return nil
	case cmd == 0x16 && b[0] == 0 && len(b) == 12:
		cols, params := int(binary.LittleEndian.Uint16(b[5:])), int(binary.LittleEndian.Uint16(b[7:]))
		for _, n := range []int{params, cols} {
			if n == 0 {
				continue
			}
			for i := 0; i <= n; i++ { // n definitions and EOF
				if _, err := c.read(); err != nil {
					return err
				}
			}
		}
		return nil
	case b[0] == 0:
		return nil
	default:
		defs = int(b[0]) // a result set's column count
	}
	for i := 0; i <= defs; i++ { // definitions and EOF
		if _, err := c.read(); err != nil {
			return err
		}
	}
	for { // rows until EOF or ERR
		b, err := c.read()
		if err != nil {
			return err
		}
		if b[0] == 0xff || b[0] == 0xfe && len(b) < 9 {
			return nil
		}
	}
}
