package sqlsmithtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"time"
)

// Unanswered is the Code of a query whose client left before the server
// answered it (a hang, when the client was killed at a deadline).
const Unanswered = "unanswered"

// Outcome is what happened to one simple Query.
type Outcome struct {
	Query   string
	Code    string // SQLSTATE of the ErrorResponse; "" when it succeeded
	Message string
	// Took is the time from the Query to its ReadyForQuery.
	Took time.Duration
}

// Proxy relays PostgreSQL wire-protocol connections from a loopback port to
// a server and records the outcome of every simple Query (the protocol
// libpq's PQexec, and so sqlsmith, uses).
type Proxy struct {
	Addr string // where clients connect

	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu       sync.Mutex
	outcomes []Outcome
	// broken counts connections the server closed while a query was
	// pending (the client saw "server closed the connection").
	broken int
}

// StartProxy listens on a free loopback port and relays to target.
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Close stops listening and waits for the relays to end.
func (p *Proxy) Close() {
	p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.relay(c, s)
		}()
	}
}

// relay copies both directions message by message. Queries go into a FIFO;
// each ReadyForQuery completes the oldest, with the ErrorResponse seen
// since, if any.
func (p *Proxy) relay(client, server net.Conn) {
	defer client.Close()
	defer server.Close()
	var (
		mu      sync.Mutex
		pending []string
		sent    []time.Time
		errCode string
		errMsg  string
		// clientGone: the client ended the session (or its side failed);
		// the server's side then ends because the proxy closed it.
		clientGone bool
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer server.Close()
		defer func() {
			mu.Lock()
			clientGone = true
			mu.Unlock()
		}()
		_ = copyFrontend(client, server, func(query string) {
			mu.Lock()
			pending = append(pending, query)
			sent = append(sent, time.Now())
			mu.Unlock()
		})
	}()
	err := copyBackend(server, client, func(typ byte, payload []byte) {
		mu.Lock()
		defer mu.Unlock()
		switch typ {
		case 'E':
			if errCode == "" {
				errCode, errMsg = errorFields(payload)
			}
		case 'Z':
			if len(pending) > 0 {
				p.record(Outcome{Query: pending[0], Code: errCode, Message: errMsg, Took: time.Since(sent[0])})
				pending, sent = pending[1:], sent[1:]
			}
			errCode, errMsg = "", ""
		}
	})
	mu.Lock()
	serverFirst := !clientGone
	mu.Unlock()
	client.Close()
	<-done
	mu.Lock()
	switch {
	case err != nil && len(pending) > 0 && serverFirst:
		p.mu.Lock()
		p.broken++
		p.mu.Unlock()
		p.record(Outcome{Query: pending[0], Code: "08006", Message: "connection lost: " + err.Error()})
	case len(pending) > 0:
		// The client went away (or was killed) waiting for an answer.
		p.record(Outcome{Query: pending[0], Code: Unanswered, Message: "no answer before the client left"})
	}
	mu.Unlock()
}

func (p *Proxy) record(o Outcome) {
	p.mu.Lock()
	p.outcomes = append(p.outcomes, o)
	p.mu.Unlock()
}

// Outcomes returns a copy of the recorded outcomes, in completion order.
func (p *Proxy) Outcomes() []Outcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Outcome(nil), p.outcomes...)
}

// Broken is the number of connections lost with a query pending.
func (p *Proxy) Broken() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.broken
}

// copyFrontend relays client messages: the untyped startup packet, then
// typed messages; it reports each simple Query's text. Encryption requests
// are not relayed (clients connect with sslmode=disable
// gssencmode=disable): the server's one-byte answer has no message frame.
func copyFrontend(src io.Reader, dst io.Writer, onQuery func(string)) error {
	n, body, err := readUntyped(src)
	if err != nil {
		return err
	}
	if len(body) < 4 {
		return errors.New("short startup packet")
	}
	if code := binary.BigEndian.Uint32(body[:4]); code == 80877103 || code == 80877104 {
		return errors.New("encryption requests are not relayed: connect with sslmode=disable gssencmode=disable")
	}
	if _, err := dst.Write(append(n, body...)); err != nil {
		return err
	}
	for {
		typ, msg, err := readTyped(src)
		if err != nil {
			return err
		}
		// Reported before it is sent: the server's answer may come back
		// before Write returns.
		if typ == 'Q' {
			onQuery(strings.TrimRight(string(msg[5:]), "\x00"))
		}
		if _, err := dst.Write(msg); err != nil {
			return err
		}
	}
}

// copyBackend relays server messages, reporting each one.
func copyBackend(src io.Reader, dst io.Writer, on func(byte, []byte)) error {
	for {
		typ, msg, err := readTyped(src)
		if err != nil {
			return err
		}
		if _, err := dst.Write(msg); err != nil {
			return err
		}
		on(typ, msg[5:])
	}
}

func readUntyped(r io.Reader) (hdr, body []byte, err error) {
	hdr = make([]byte, 4)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr))
	if n < 4 || n > 1<<20 {
		return nil, nil, fmt.Errorf("bad startup length %d", n)
	}
	body = make([]byte, n-4)
	_, err = io.ReadFull(r, body)
	return hdr, body, err
}

// readTyped reads one typed message and returns it whole (type, length
// and payload).
func readTyped(r io.Reader) (byte, []byte, error) {
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:]))
	if n < 4 || n > 1<<30 {
		return 0, nil, fmt.Errorf("bad message length %d (type %q)", n, hdr[0])
	}
	msg := make([]byte, 1+n)
	copy(msg, hdr)
	if _, err := io.ReadFull(r, msg[5:]); err != nil {
		return 0, nil, err
	}
	return hdr[0], msg, nil
}

// errorFields returns the SQLSTATE ('C') and message ('M') of an
// ErrorResponse payload.
func errorFields(b []byte) (code, msg string) {
	for len(b) > 0 && b[0] != 0 {
		f := b[0]
		end := 1
		for end < len(b) && b[end] != 0 {
			end++
		}
		v := string(b[1:end])
		switch f {
		case 'C':
			code = v
		case 'M':
			msg = v
		}
		if end >= len(b) {
			break
		}
		b = b[end+1:]
	}
	return code, msg
}

// Breakdown counts outcomes by SQLSTATE ("" for success) and renders the
// counts, most frequent first, with one example message per code.
func Breakdown(outs []Outcome) string {
	count := map[string]int{}
	example := map[string]string{}
	for _, o := range outs {
		count[o.Code]++
		if _, ok := example[o.Code]; !ok {
			example[o.Code] = o.Message
		}
	}
	codes := make([]string, 0, len(count))
	for c := range count {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool {
		if count[codes[i]] != count[codes[j]] {
			return count[codes[i]] > count[codes[j]]
		}
		return codes[i] < codes[j]
	})
	var b strings.Builder
	for _, c := range codes {
		name := c
		if c == "" {
			name = "ok"
		}
		msg := example[c]
		if len(msg) > 100 {
			msg = msg[:100] + "..."
		}
		fmt.Fprintf(&b, "%7d  %-5s  %s\n", count[c], name, msg)
	}
	return b.String()
}

// TimeByKind sums the time statements took by their first word (select,
// insert, ...), most expensive first.
func TimeByKind(outs []Outcome) string {
	sum := map[string]time.Duration{}
	n := map[string]int{}
	for _, o := range outs {
		k := strings.ToLower(strings.TrimRight(strings.SplitN(strings.TrimSpace(o.Query)+" ", " ", 2)[0], ";"))
		if k == "" {
			k = "?"
		}
		sum[k] += o.Took
		n[k]++
	}
	kinds := make([]string, 0, len(sum))
	for k := range sum {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return sum[kinds[i]] > sum[kinds[j]] })
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "%7d  %-10s %v\n", n[k], k, sum[k].Round(time.Millisecond))
	}
	return b.String()
}
