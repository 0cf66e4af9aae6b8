package pgwire

import (
	"net"
	"syscall"
)

// peerClosed reports whether the client has closed its end of nc (FIN or
// reset) with nothing left to read, without consuming any byte: a
// non-blocking MSG_PEEK that returns 0 bytes. Pending bytes (a pipelined
// message) mean the client is still there. It reports false where it
// cannot tell.
//
// It uses Control, not Read, so it never waits on a read that the
// connection's own goroutine has in progress (COPY FROM STDIN).
func peerClosed(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	_ = rc.Control(func(fd uintptr) {
		var buf [1]byte
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = (n == 0 && err == nil) || err == syscall.ECONNRESET
	})
	return closed
}
