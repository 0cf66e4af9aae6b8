package protocoltest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// rawSession is a wire-level session past startup, for sending what no
// driver would.
type rawSession struct {
	nc net.Conn
	fe *pgproto3.Frontend
}

func startRaw(t *testing.T, addr string) *rawSession {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(time.Minute))
	r := &rawSession{nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
	r.fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": "root", "database": "dev"}})
	if err := r.fe.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := r.fe.Receive()
		if err != nil {
			t.Fatalf("startup: %v", err)
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			return r
		}
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			t.Fatalf("startup: %s %s", e.Code, e.Message)
		}
	}
}

// expectFatal reads until the server's FATAL error with code and then the
// end of the connection.
func (r *rawSession) expectFatal(t *testing.T, code string) {
	t.Helper()
	for {
		m, err := r.fe.Receive()
		if err != nil {
			t.Fatalf("before the FATAL %s: %v", code, err)
		}
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			if e.Severity != "FATAL" || e.Code != code {
				t.Fatalf("got %s %s (%s); want FATAL %s", e.Severity, e.Code, e.Message, code)
			}
			break
		}
	}
	if m, err := r.fe.Receive(); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(errString(err), "reset") {
		t.Fatalf("after the FATAL: %T %v; want the connection closed", m, err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestMalformedMessages sends an oversized message and malformed ones to a
// real server: each gets FATAL and its connection closed, while a session
// in the middle of its work carries on.
func TestMalformedMessages(t *testing.T) {
	srv := servertest.Start(t)
	bystander := srv.Connect(t)
	servertest.Exec(t, bystander, "SET RW_IMPLICIT_FLUSH TO true")
	servertest.Exec(t, bystander, "CREATE TABLE m (k int PRIMARY KEY)")
	servertest.Exec(t, bystander, "INSERT INTO m VALUES (1)")

	// A message whose declared length is far beyond the limit: refused
	// from its header, before the body is read.
	r := startRaw(t, srv.Addr)
	r.nc.Write([]byte{'Q', 0x7f, 0xff, 0xff, 0xff})
	r.expectFatal(t, "54000")

	for _, b := range [][]byte{
		{'z', 0, 0, 0, 4},                // no such message type
		{'Q', 0, 0, 0, 2},                // length below the minimum
		{'B', 0, 0, 0, 8, 0, 0, 0, 9},    // Bind running past its body
		{'P', 0, 0, 0, 6, 'x', 0},        // Parse cut short
		{'E', 0, 0, 0, 5, 0xff},          // Execute without a portal name terminator
		{'Q', 0, 0, 0, 7, 'S', 'E', 'L'}, // query string without its terminator
	} {
		t.Run(fmt.Sprintf("%q", b), func(t *testing.T) {
			r := startRaw(t, srv.Addr)
			r.nc.Write(b)
			r.expectFatal(t, "08P01")
		})
	}

	servertest.Exec(t, bystander, "INSERT INTO m VALUES (2)")
	if got := servertest.QueryText(t, bystander, "SELECT count(*) FROM m"); len(got) != 1 || got[0] != "2" {
		t.Fatalf("bystander: %v", got)
	}
	if got := servertest.QueryText(t, srv.Connect(t), "SELECT count(*) FROM m"); len(got) != 1 || got[0] != "2" {
		t.Fatalf("new session: %v", got)
	}
}
