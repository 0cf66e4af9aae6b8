//go:build !linux

package pgwire

import "net"

// peerClosed cannot tell on this platform (see peer_linux.go).
func peerClosed(net.Conn) bool { return false }
