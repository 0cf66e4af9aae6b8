package pgwire

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// rawClient speaks the protocol message by message, to check exact
// server responses.
type rawClient struct {
	t  testing.TB
	nc net.Conn
	fe *pgproto3.Frontend
	// pid and secret from BackendKeyData
	pid    uint32
	secret []byte
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawClient{t: t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
}

func startupRaw(t testing.TB, addr string) *rawClient {
	r := dialRaw(t, addr)
	r.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": "root", "database": "dev"}})
	tr := r.untilReady()
	if tr[len(tr)-1] != "Z I" {
		t.Fatalf("startup: %v", tr)
	}
	return r
}

func (r *rawClient) send(msgs ...pgproto3.FrontendMessage) {
	r.t.Helper()
	for _, m := range msgs {
		r.fe.Send(m)
	}
	if err := r.fe.Flush(); err != nil {
		r.t.Fatalf("send: %v", err)
	}
}

// describe renders a backend message compactly for transcripts.
func describeMsg(m pgproto3.BackendMessage) string {
	switch m := m.(type) {
	case *pgproto3.ParseComplete:
		return "1"
	case *pgproto3.BindComplete:
		return "2"
	case *pgproto3.CloseComplete:
		return "3"
	case *pgproto3.RowDescription:
		var names []string
		for _, f := range m.Fields {
			names = append(names, fmt.Sprintf("%s:%d:%d", f.Name, f.DataTypeOID, f.Format))
		}
		return "T " + strings.Join(names, ",")
	case *pgproto3.ParameterDescription:
		return fmt.Sprint("t ", m.ParameterOIDs)
	case *pgproto3.NoData:
		return "n"
	case *pgproto3.DataRow:
		var vals []string
		for _, v := range m.Values {
			if v == nil {
				vals = append(vals, "NULL")
			} else {
				vals = append(vals, string(v))
			}
		}
		return "D " + strings.Join(vals, "|")
	case *pgproto3.CommandComplete:
		return "C " + string(m.CommandTag)
	case *pgproto3.PortalSuspended:
		return "s"
	case *pgproto3.EmptyQueryResponse:
		return "I"
	case *pgproto3.ErrorResponse:
		return "E " + m.Severity + " " + m.Code
	case *pgproto3.NoticeResponse:
		return "N " + m.Code
	case *pgproto3.ReadyForQuery:
		return "Z " + string(m.TxStatus)
	case *pgproto3.CopyInResponse:
		return "G"
	case *pgproto3.CopyOutResponse:
		return "H"
	case *pgproto3.CopyData:
		return "d " + string(m.Data)
	case *pgproto3.CopyDone:
		return "c"
	case *pgproto3.AuthenticationOk:
		return "R ok"
	case *pgproto3.ParameterStatus:
		return "S " + m.Name
	case *pgproto3.BackendKeyData:
		return "K"
	}
	return fmt.Sprintf("%T", m)
}

// untilReady reads messages up to and including ReadyForQuery (or a
// FATAL error followed by EOF).
func (r *rawClient) untilReady() []string {
	r.t.Helper()
	var out []string
	for {
		m, err := r.fe.Receive()
		if err != nil {
			if len(out) > 0 && strings.HasPrefix(out[len(out)-1], "E FATAL") {
				return append(out, "EOF")
			}
			r.t.Fatalf("receive after %v: %v", out, err)
		}
		d := describeMsg(m)
		if k, ok := m.(*pgproto3.BackendKeyData); ok {
			r.pid, r.secret = k.ProcessID, append([]byte(nil), k.SecretKey...)
		}
		if strings.HasPrefix(d, "S ") || d == "K" {
			continue // parameter status noise
		}
		out = append(out, d)
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			return out
		}
	}
}

func (r *rawClient) expect(want ...string) {
	r.t.Helper()
	got := r.untilReady()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		r.t.Fatalf("transcript:\n  got  %q\n  want %q", got, want)
	}
}

func pbe(sql string, maxRows uint32) []pgproto3.FrontendMessage {
	return []pgproto3.FrontendMessage{
		&pgproto3.Parse{Query: sql},
		&pgproto3.Bind{},
		&pgproto3.Execute{MaxRows: maxRows},
	}
}

func msgs(groups ...[]pgproto3.FrontendMessage) []pgproto3.FrontendMessage {
	var out []pgproto3.FrontendMessage
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

var syncMsg = []pgproto3.FrontendMessage{&pgproto3.Sync{}}

func TestPipelineErrorRecovery(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	r := startupRaw(t, ts.addr)
	r.send(msgs(pbe("SELECT 1", 0), pbe("SELECT 1/0", 0), pbe("SELECT 2", 0),
		[]pgproto3.FrontendMessage{&pgproto3.Describe{ObjectType: 'S', Name: "nope"}}, syncMsg)...)
	r.expect("1", "2", "D 1", "C SELECT 1", "1", "2", "E ERROR 22012", "Z I")
	// A Parse error discards the Bind/Execute after it; Sync recovers.
	r.send(msgs(pbe("SELEC 1", 0), syncMsg, pbe("SELECT 3", 0), syncMsg)...)
	r.expect("E ERROR 42601", "Z I")
	r.expect("1", "2", "D 3", "C SELECT 1", "Z I")
	// Simple query after an extended-protocol error.
	r.send(msgs(pbe("SELECT 1/0", 0), syncMsg, []pgproto3.FrontendMessage{&pgproto3.Query{String: "SELECT 4"}})...)
	r.expect("1", "2", "E ERROR 22012", "Z I")
	r.expect("T ?column?:23:0", "D 4", "C SELECT 1", "Z I")
}

func TestPortalSuspension(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	r := startupRaw(t, ts.addr)
	r.send(&pgproto3.Parse{Query: "SELECT * FROM series(5)"}, &pgproto3.Bind{},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{MaxRows: 2}, &pgproto3.Execute{MaxRows: 2}, &pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2}, &pgproto3.Sync{})
	r.expect("1", "2", "T i:20:0", "D 1", "D 2", "s", "D 3", "D 4", "s", "D 5", "C SELECT 1", "C SELECT 0", "Z I")
	// Outside a transaction the portal is gone after Sync.
	r.send(&pgproto3.Execute{}, &pgproto3.Sync{})
	r.expect("E ERROR 34000", "Z I")
	// Inside a transaction a named portal survives Sync, and binary
	// result format applies per Bind.
	r.send(&pgproto3.Query{String: "BEGIN"})
	r.expect("C BEGIN", "Z T")
	r.send(&pgproto3.Parse{Name: "s1", Query: "SELECT * FROM series(3)"},
		&pgproto3.Bind{DestinationPortal: "p1", PreparedStatement: "s1", ResultFormatCodes: []int16{1}},
		&pgproto3.Describe{ObjectType: 'P', Name: "p1"},
		&pgproto3.Execute{Portal: "p1", MaxRows: 1}, &pgproto3.Sync{})
	r.expect("1", "2", "T i:20:1", "D \x00\x00\x00\x00\x00\x00\x00\x01", "s", "Z T")
	r.send(&pgproto3.Execute{Portal: "p1"}, &pgproto3.Close{ObjectType: 'P', Name: "p1"},
		&pgproto3.Execute{Portal: "p1"}, &pgproto3.Sync{})
	r.expect("D \x00\x00\x00\x00\x00\x00\x00\x02", "D \x00\x00\x00\x00\x00\x00\x00\x03", "C SELECT 2", "3", "E ERROR 34000", "Z E")
	r.send(&pgproto3.Query{String: "ROLLBACK"})
	r.expect("C ROLLBACK", "Z I")
}

func TestStatementsAndDescribe(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	r := startupRaw(t, ts.addr)
	r.send(&pgproto3.Parse{Name: "q", Query: "SELECT $1::int8, $2", ParameterOIDs: []uint32{0, 25}},
		&pgproto3.Describe{ObjectType: 'S', Name: "q"},
		&pgproto3.Parse{Name: "ins", Query: "INSERT INTO t VALUES (1, 'x')"},
		&pgproto3.Describe{ObjectType: 'S', Name: "ins"},
		&pgproto3.Bind{PreparedStatement: "q", Parameters: [][]byte{[]byte("42"), nil}},
		&pgproto3.Execute{},
		&pgproto3.Bind{PreparedStatement: "ins"}, &pgproto3.Execute{},
		&pgproto3.Sync{})
	r.expect("1", "t [20 25]", "T ?column?:20:0,?column?:25:0", "1", "t []", "n",
		"2", "D 42|NULL", "C SELECT 1", "2", "C INSERT 0 1", "Z I")
	// Duplicate names, unknown statements, bad format codes, several
	// statements in one Parse, wrong parameter count.
	cases := []struct {
		msgs []pgproto3.FrontendMessage
		want []string
	}{
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Name: "q", Query: "SELECT 1"}}, []string{"E ERROR 42P05", "Z I"}},
		{[]pgproto3.FrontendMessage{&pgproto3.Bind{PreparedStatement: "zz"}}, []string{"E ERROR 26000", "Z I"}},
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Query: "SELECT 1; SELECT 2"}}, []string{"E ERROR 42601", "Z I"}},
		{[]pgproto3.FrontendMessage{&pgproto3.Bind{PreparedStatement: "q"}}, []string{"E ERROR 08P01", "Z I"}},
		{[]pgproto3.FrontendMessage{&pgproto3.Bind{PreparedStatement: "q", Parameters: [][]byte{nil, nil},
			ResultFormatCodes: []int16{0, 0, 0}}}, []string{"E ERROR 08P01", "Z I"}},
		{[]pgproto3.FrontendMessage{&pgproto3.Bind{PreparedStatement: "q", Parameters: [][]byte{nil, nil},
			ResultFormatCodes: []int16{7}}}, []string{"E ERROR 08P01", "Z I"}},
		{[]pgproto3.FrontendMessage{&pgproto3.Close{ObjectType: 'S', Name: "q"}, &pgproto3.Close{ObjectType: 'S', Name: "q"},
			&pgproto3.Bind{PreparedStatement: "q"}}, []string{"3", "3", "E ERROR 26000", "Z I"}},
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Query: "  "}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'},
			&pgproto3.Execute{}}, []string{"1", "2", "n", "I", "Z I"}},
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Query: "SELECT $2"}}, []string{"E ERROR 42P18", "Z I"}},
	}
	for i, c := range cases {
		r.send(append(c.msgs, &pgproto3.Sync{})...)
		got := r.untilReady()
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("case %d: got %q; want %q", i, got, c.want)
		}
	}
	// Flush delivers pending output without a Sync.
	r.send(&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Flush{})
	m, err := r.fe.Receive()
	if err != nil || describeMsg(m) != "1" {
		t.Fatalf("after Flush: %v %v", m, err)
	}
	r.send(&pgproto3.Sync{})
	r.expect("Z I")
}

func TestCopyProtocol(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	r := startupRaw(t, ts.addr)
	// CopyFail aborts; stray copy messages afterwards are dropped.
	r.send(&pgproto3.Query{String: "COPY t FROM STDIN"})
	if m, err := r.fe.Receive(); err != nil || describeMsg(m) != "G" {
		t.Fatalf("want CopyInResponse: %v %v", m, err)
	}
	r.send(&pgproto3.CopyData{Data: []byte("1\ta\n")}, &pgproto3.CopyFail{Message: "client gave up"})
	r.expect("E ERROR 57014", "Z I")
	r.send(&pgproto3.CopyData{Data: []byte("junk")}, &pgproto3.CopyDone{}, &pgproto3.Query{String: "SELECT count(*) FROM t"})
	r.expect("T count:20:0", "D 0", "C SELECT 1", "Z I")
	// Data split at arbitrary points, Flush/Sync ignored inside COPY.
	r.send(&pgproto3.Query{String: "COPY t FROM STDIN CSV"})
	r.fe.Receive()
	r.send(&pgproto3.CopyData{Data: []byte("1,\"a\n")}, &pgproto3.Flush{}, &pgproto3.CopyData{Data: []byte("b\"\n2,c")},
		&pgproto3.Sync{}, &pgproto3.CopyDone{})
	r.expect("C COPY 2", "Z I")
	// COPY through the extended protocol.
	r.send(&pgproto3.Parse{Query: "COPY t TO STDOUT CSV"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	r.expect("1", "2", "H", "d 1,\"a\nb\"\n", "d 2,c\n", "c", "C COPY 2", "Z I")
	// An error inside an extended-protocol COPY IN waits for Sync.
	r.send(&pgproto3.Parse{Query: "COPY t FROM STDIN"}, &pgproto3.Bind{}, &pgproto3.Execute{})
	r.fe.Receive()
	r.fe.Receive()
	if m, _ := r.fe.Receive(); describeMsg(m) != "G" {
		t.Fatalf("want CopyInResponse, got %v", describeMsg(m))
	}
	r.send(&pgproto3.CopyData{Data: []byte("nope\tx\n")}, &pgproto3.CopyDone{}, &pgproto3.Query{String: "SELECT 1"}, &pgproto3.Sync{})
	r.expect("E ERROR 22P02", "Z I")
}

func TestOversizedAndMalformedMessages(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxMessageSize = 1024
	ts := startServer(t, cfg, newFakeEngine())
	bystander := startupRaw(t, ts.addr)

	r := startupRaw(t, ts.addr)
	r.send(&pgproto3.Query{String: "SELECT '" + strings.Repeat("x", 2000) + "'"})
	r.expect("E FATAL 54000", "EOF")

	raw := func(b []byte, want ...string) {
		t.Helper()
		r := startupRaw(t, ts.addr)
		if _, err := r.nc.Write(b); err != nil {
			t.Fatal(err)
		}
		r.expect(want...)
	}
	// A message type that does not exist.
	raw([]byte{'z', 0, 0, 0, 4}, "E FATAL 08P01", "EOF")
	// A length below the minimum.
	raw([]byte{'Q', 0, 0, 0, 2}, "E FATAL 08P01", "EOF")
	// A Bind whose parameter count runs past the body.
	raw([]byte{'B', 0, 0, 0, 8, 0, 0, 0, 9}, "E FATAL 08P01", "EOF")
	// Whole bodies whose strings lack their terminator (pgproto3 reports
	// these as a bare io.EOF, which is not a disconnect).
	raw([]byte{'P', 0, 0, 0, 6, 'x', 0}, "E FATAL 08P01", "EOF")
	raw([]byte{'E', 0, 0, 0, 5, 0xff}, "E FATAL 08P01", "EOF")

	// A garbage startup packet.
	c := dialRaw(t, ts.addr)
	c.nc.Write([]byte{0, 0, 0, 8, 0, 0, 0, 1})
	if m, err := c.fe.Receive(); err != nil || describeMsg(m) != "E FATAL 08P01" {
		t.Fatalf("bad startup: %v %v", m, err)
	}
	// The bystander is unaffected.
	bystander.send(&pgproto3.Query{String: "SELECT 5"})
	bystander.expect("T ?column?:23:0", "D 5", "C SELECT 1", "Z I")
}

func TestStartupNegotiation(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	r := dialRaw(t, ts.addr)
	// GSSENC and SSL are refused with 'N'; the client then proceeds in
	// clear text on the same connection.
	for _, code := range []uint32{80877104, 80877103} {
		req := binary.BigEndian.AppendUint32([]byte{0, 0, 0, 8}, code)
		if _, err := r.nc.Write(req); err != nil {
			t.Fatal(err)
		}
		var b [1]byte
		if _, err := io.ReadFull(r.nc, b[:]); err != nil || b[0] != 'N' {
			t.Fatalf("code %d: got %q %v; want N", code, b[0], err)
		}
	}
	r.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": "root", "database": "dev"}})
	r.expect("R ok", "Z I")
	r.send(&pgproto3.Terminate{})
	if _, err := r.fe.Receive(); err == nil {
		t.Fatalf("connection still open after Terminate")
	}
	// A protocol 3.2 client is offered 3.0.
	r2 := dialRaw(t, ts.addr)
	r2.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion32,
		Parameters: map[string]string{"user": "root", "database": "dev"}})
	r2.expect("*pgproto3.NegotiateProtocolVersion", "R ok", "Z I")
	// No user name.
	r3 := dialRaw(t, ts.addr)
	r3.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"database": "dev"}})
	r3.expect("E FATAL 28000", "EOF")
}

func TestEnginePanicEndsOnlyItsConnection(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	var panics int
	ts.srv.hooks = &testHooks{panicked: func(any, []byte) { panics++ }}
	bystander := startupRaw(t, ts.addr)
	r := startupRaw(t, ts.addr)
	r.send(&pgproto3.Query{String: "PANIC"})
	r.expect("E FATAL XX000", "EOF")
	if panics != 1 {
		t.Fatalf("panicked hook called %d times", panics)
	}
	// An engine error that wraps io.EOF is a statement error, not a
	// disconnect.
	bystander.send(&pgproto3.Query{String: "EOFERR"})
	bystander.expect("E ERROR XX000", "Z I")
	bystander.send(&pgproto3.Parse{Query: "EOFERR"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	bystander.expect("1", "2", "E ERROR XX000", "Z I")
	bystander.send(&pgproto3.Query{String: "SELECT 6"})
	bystander.expect("T ?column?:23:0", "D 6", "C SELECT 1", "Z I")
}

// remoteConn makes a pipe look like a connection from another host.
type remoteConn struct{ net.Conn }

func (remoteConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5555} }

func dialRemote(t *testing.T, srv *Server) *rawClient {
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close() })
	if !srv.startConn(remoteConn{server}) {
		t.Fatal("startConn refused")
	}
	client.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawClient{t: t, nc: client, fe: pgproto3.NewFrontend(client, client)}
}

func TestRemotePolicies(t *testing.T) {
	eng := newFakeEngine()
	eng.users = map[string]AuthInfo{"root": {}, "alice": {SCRAMVerifier: NewSCRAMVerifier("pw")}}
	start := func(user string) *pgproto3.StartupMessage {
		return &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
			Parameters: map[string]string{"user": user, "database": "dev"}}
	}
	// Trust applies to loopback only: a remote user without a password
	// is refused, a user with one is asked for SCRAM.
	ts := startServer(t, DefaultConfig(), eng)
	r := dialRemote(t, ts.srv)
	r.send(start("root"))
	r.expect("E FATAL 28P01", "EOF")
	r = dialRemote(t, ts.srv)
	r.send(start("alice"))
	if m, err := r.fe.Receive(); err != nil || describeMsg(m) != "*pgproto3.AuthenticationSASL" {
		t.Fatalf("want SASL request: %v %v", m, err)
	}
	// AuthTrustAll admits the remote user.
	cfg := DefaultConfig()
	cfg.AuthTrustAll = true
	ts2 := startServer(t, cfg, eng)
	r = dialRemote(t, ts2.srv)
	r.send(start("root"))
	r.expect("R ok", "Z I")
	// FunctionCall is refused like a simple query.
	r.send(&pgproto3.FunctionCall{Function: 1})
	r.expect("E ERROR 0A000", "Z I")
	// RequireTLS refuses a remote clear-text connection.
	cfg.RequireTLS = true
	ts3 := startServer(t, cfg, eng)
	r = dialRemote(t, ts3.srv)
	r.send(start("root"))
	r.expect("E FATAL 28000", "EOF")
}

// TestCancelWhileStreaming cancels a statement whose iterator never looks
// at its context: the server's own check between rows stops it.
func TestCancelWhileStreaming(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	r := startupRaw(t, ts.addr)
	r.send(&pgproto3.Query{String: "SELECT * FROM series(1000000000)"})
	for i := 0; i < 1000; i++ {
		m, err := r.fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if _, ok := m.(*pgproto3.DataRow); !ok {
				t.Fatalf("message %d: %s", i, describeMsg(m))
			}
		}
	}
	c := dialRaw(t, ts.addr)
	c.send(&pgproto3.CancelRequest{ProcessID: r.pid, SecretKey: r.secret})
	if _, err := c.fe.Receive(); err == nil {
		t.Fatalf("cancel connection was not closed")
	}
	var tail []string
	for {
		m, err := r.fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(*pgproto3.DataRow); ok {
			continue
		}
		tail = append(tail, describeMsg(m))
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	if strings.Join(tail, ",") != "E ERROR 57014,Z I" {
		t.Fatalf("after cancel: %q", tail)
	}
}
