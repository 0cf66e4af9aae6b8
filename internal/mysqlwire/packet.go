package mysqlwire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A MySQL packet is a 3-byte little-endian payload length, a 1-byte
// sequence id and the payload. A payload of 0xffffff bytes or more is
// split: every full chunk is followed by the next, and a chunk shorter than
// 0xffffff (possibly empty) ends the payload.
//
//	+----------+-----+---------------------+
//	| len (3)  | seq | payload (len bytes) |
//	+----------+-----+---------------------+
//
// The sequence id restarts at 0 with every command the client sends and
// increases by one with every packet either side sends while answering it.

const maxChunk = 0xffffff

// errPacketTooLarge is returned by readPacket for a payload over the
// connection's limit; the connection answers it with ER_NET_PACKET_TOO_LARGE
// and closes (I9: a client cannot make the server buffer without bound).
var errPacketTooLarge = errors.New("packet too large")

// errSequence reports a packet whose sequence id is not the expected one.
var errSequence = errors.New("packets out of order")

// packetIO reads and writes packets on one connection.
type packetIO struct {
	r   *bufio.Reader
	w   *bufio.Writer
	seq uint8
	max int // the largest payload readPacket accepts
}

// readPacket reads one whole payload (joining split chunks).
func (p *packetIO) readPacket() ([]byte, error) {
	var payload []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(p.r, hdr[:]); err != nil {
			return nil, err
		}
		n := int(uint32(hdr[0]) | uint32(hdr[1])<<8 | uint32(hdr[2])<<16)
		if hdr[3] != p.seq {
			return nil, fmt.Errorf("%w: got sequence id %d, want %d", errSequence, hdr[3], p.seq)
		}
		p.seq++
		if len(payload)+n > p.max {
			return nil, errPacketTooLarge
		}
		start := len(payload)
		payload = append(payload, make([]byte, n)...)
		if _, err := io.ReadFull(p.r, payload[start:]); err != nil {
			return nil, err
		}
		if n < maxChunk {
			return payload, nil
		}
	}
}

// writePacket buffers payload as one packet (split as needed); flush sends.
func (p *packetIO) writePacket(payload []byte) error {
	for {
		n := min(len(payload), maxChunk)
		hdr := [4]byte{byte(n), byte(n >> 8), byte(n >> 16), p.seq}
		p.seq++
		if _, err := p.w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := p.w.Write(payload[:n]); err != nil {
			return err
		}
		payload = payload[n:]
		if n < maxChunk {
			return nil
		}
	}
}

func (p *packetIO) flush() error { return p.w.Flush() }

// Length-encoded integers and strings (MySQL's "lenenc").

func appendLenEncInt(b []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(b, byte(v))
	case v < 1<<16:
		return append(b, 0xfc, byte(v), byte(v>>8))
	case v < 1<<24:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	default:
		b = append(b, 0xfe)
		return binary.LittleEndian.AppendUint64(b, v)
	}
}

func appendLenEncString(b []byte, s string) []byte {
	b = appendLenEncInt(b, uint64(len(s)))
	return append(b, s...)
}

// reader decodes a payload; every read is bounds-checked, and the first
// short read sets err (later reads return zero values), so a malformed
// packet becomes an error, never a panic (I9).
type reader struct {
	b   []byte
	err error
}

var errMalformed = errors.New("malformed packet")

func (r *reader) fail() {
	if r.err == nil {
		r.err = errMalformed
	}
	r.b = nil
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || len(r.b) < n {
		r.fail()
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() uint8 {
	b := r.bytes(1)
	if b == nil {
		return 0
	}
	return b[0]
}

func (r *reader) u16() uint16 {
	b := r.bytes(2)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

func (r *reader) u32() uint32 {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *reader) u64() uint64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// nulString reads up to a NUL byte (consumed); without one, the rest.
func (r *reader) nulString() string {
	for i, c := range r.b {
		if c == 0 {
			s := string(r.b[:i])
			r.b = r.b[i+1:]
			return s
		}
	}
	s := string(r.b)
	r.b = nil
	return s
}

func (r *reader) lenEncInt() (v uint64, null bool) {
	c := r.u8()
	switch c {
	case 0xfb:
		return 0, true
	case 0xfc:
		return uint64(r.u16()), false
	case 0xfd:
		b := r.bytes(3)
		if b == nil {
			return 0, false
		}
		return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16, false
	case 0xfe:
		return r.u64(), false
	case 0xff:
		r.fail()
		return 0, false
	}
	return uint64(c), false
}

func (r *reader) lenEncString() (s string, null bool) {
	n, null := r.lenEncInt()
	if null || r.err != nil {
		return "", null
	}
	if n > uint64(len(r.b)) {
		r.fail()
		return "", false
	}
	return string(r.bytes(int(n))), false
}
