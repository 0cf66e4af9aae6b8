package pgcdc

import (
	"net"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/types"
)

// Issue 13 item 8: stopping a CDC reader is prompt even when its upstream
// stops answering. An aborted actor closes its reader (splitStream.Close).
// Committed only hands a committed epoch's LSN to the reader's goroutine
// (an atomic store, I8); that goroutine's connection, the acknowledgements
// it sends and its retry backoff all run under the reader's context, which
// Close cancels. The upstream here accepts TCP connections and never says
// a word (a PostgreSQL that hangs), so the reader is blocked in its
// connection's startup when Close comes. Without the context on the
// connection Close waits until the kernel gives up on the socket, and the
// recovery that stops the actor reports it stuck. (A hang after the
// replication handshake, in an acknowledgement itself, would need a fake
// replication server; it is not covered here.)
func TestReaderCloseWithHungUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open, never answered
		}
	}()
	defer func() {
		for len(accepted) > 0 {
			(<-accepted).Close()
		}
	}()
	addr := ln.Addr().(*net.TCPAddr)
	cfg := Config{Host: "127.0.0.1", Port: addr.Port, User: "u", Database: "d", Schema: "public", Table: "t", Slot: "s", Publication: "p"}
	committed := &State{Phase: PhaseStream, Slot: "s", LSN: 0x1000}
	r := Start(cfg, []Column{{Name: "id", Type: types.Int32}}, []int{0}, committed, Options{StatusInterval: 10 * time.Millisecond, Name: "t"})
	select {
	case c := <-accepted:
		accepted <- c
	case <-time.After(30 * time.Second):
		r.Close()
		t.Fatal("the reader never connected to the upstream")
	}
	r.Committed(State{Phase: PhaseStream, Slot: "s", LSN: 0x2000}) // an epoch committed meanwhile
	closed := make(chan struct{})
	start := time.Now()
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
		t.Logf("Close returned after %v with the upstream hung", time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return within 5s of a hung upstream: the reader ignores its cancellation")
	}
}
