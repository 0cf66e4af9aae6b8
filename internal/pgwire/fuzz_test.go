package pgwire

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// fuzzConn is a client that sends a fixed byte stream and ignores
// everything the server writes.
type fuzzConn struct {
	r *bytes.Reader
}

func (c *fuzzConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF && n == 0 {
		return 0, io.EOF
	}
	return n, nil
}
func (c *fuzzConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *fuzzConn) Close() error                { return nil }
func (c *fuzzConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4566} }
func (c *fuzzConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *fuzzConn) SetDeadline(time.Time) error      { return nil }
func (c *fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fuzzConn) SetWriteDeadline(time.Time) error { return nil }

func encodeMsgs(ms ...pgproto3.FrontendMessage) []byte {
	var out []byte
	for _, m := range ms {
		out, _ = m.Encode(out)
	}
	return out
}

var fuzzStartup = encodeMsgs(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
	Parameters: map[string]string{"user": "root", "database": "dev"}})

// FuzzMessageLoop feeds arbitrary bytes to a connection as the client's
// stream (after a valid startup when withStartup is set). The server must
// neither panic nor leak goroutines (goleak in TestMain), and must leave
// no registered connection behind.
func FuzzMessageLoop(f *testing.F) {
	seeds := [][]pgproto3.FrontendMessage{
		{&pgproto3.Query{String: "SELECT 1, 'a', NULL; SELECT * FROM series(3)"}},
		{&pgproto3.Query{String: "BEGIN; SELECT 1/0"}, &pgproto3.Query{String: "ROLLBACK"}, &pgproto3.Terminate{}},
		{&pgproto3.Parse{Name: "s", Query: "SELECT $1::int4, $2::text"}, &pgproto3.Describe{ObjectType: 'S', Name: "s"},
			&pgproto3.Bind{PreparedStatement: "s", ParameterFormatCodes: []int16{1, 0}, Parameters: [][]byte{{0, 0, 0, 5}, []byte("x")},
				ResultFormatCodes: []int16{1}},
			&pgproto3.Execute{MaxRows: 1}, &pgproto3.Execute{}, &pgproto3.Close{ObjectType: 'P'}, &pgproto3.Sync{}},
		{&pgproto3.Parse{Query: "SELECT * FROM series(10)"}, &pgproto3.Bind{}, &pgproto3.Execute{MaxRows: 3},
			&pgproto3.Flush{}, &pgproto3.Execute{MaxRows: 3}, &pgproto3.Sync{}},
		{&pgproto3.Query{String: "COPY t FROM STDIN CSV HEADER"}, &pgproto3.CopyData{Data: []byte("a,b\n1,\"x\ny\"\n2,")},
			&pgproto3.CopyData{Data: []byte("z\n")}, &pgproto3.CopyDone{}, &pgproto3.Query{String: "COPY t TO STDOUT"}},
		{&pgproto3.Query{String: "COPY t FROM STDIN"}, &pgproto3.CopyData{Data: []byte("1\t\\N\n\\.\n")}, &pgproto3.CopyFail{Message: "x"}},
		{&pgproto3.Query{String: "SELECT pg_sleep(1)"}, &pgproto3.Query{String: "NOTICE 'hi'"}, &pgproto3.Query{String: "SET TimeZone = 'UTC'"}},
		{&pgproto3.FunctionCall{Function: 1}, &pgproto3.Sync{}, &pgproto3.Query{String: ""}},
	}
	for _, s := range seeds {
		f.Add(true, encodeMsgs(s...))
	}
	f.Add(false, append(append([]byte(nil), fuzzStartup...), 'Q', 0, 0, 0, 9, 'S', 'E', 'L', 0))
	f.Add(false, []byte{0, 0, 0, 8, 4, 210, 22, 47})                                              // SSLRequest
	f.Add(false, []byte{0, 0, 0, 8, 4, 210, 22, 48})                                              // GSSENCRequest
	f.Add(false, []byte{0, 0, 0, 16, 4, 210, 22, 46, 0, 0, 0, 1, 0, 0, 0, 2})                     // CancelRequest
	f.Add(false, encodeMsgs(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, // SCRAM user
		Parameters: map[string]string{"user": "alice", "database": "dev"}},
		&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=abc")},
		&pgproto3.SASLResponse{Data: []byte("c=biws,r=abc,p=AAAA")}))
	f.Add(true, []byte{'B', 0, 0, 0, 8, 0, 0, 0, 9})
	f.Add(true, []byte{'P', 0xff, 0xff, 0xff, 0xff})

	verifier := NewSCRAMVerifier("pw")
	f.Fuzz(func(t *testing.T, withStartup bool, data []byte) {
		eng := newFakeEngine()
		eng.maxSleep = 0
		eng.users = map[string]AuthInfo{"root": {}, "alice": {SCRAMVerifier: verifier}}
		cfg := DefaultConfig()
		cfg.MaxMessageSize = 1 << 16
		srv := NewServer(cfg, eng)
		srv.hooks = &testHooks{panicked: func(v any, stack []byte) { t.Errorf("panic: %v\n%s", v, stack) }}
		stream := data
		if withStartup {
			stream = append(append([]byte(nil), fuzzStartup...), data...)
		}
		if !srv.startConn(&fuzzConn{r: bytes.NewReader(stream)}) {
			t.Fatal("server refused a connection")
		}
		srv.wg.Wait()
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if len(srv.conns) != 0 || len(srv.byPID) != 0 {
			t.Fatalf("connection state left behind: %d conns, %d pids", len(srv.conns), len(srv.byPID))
		}
	})
}
