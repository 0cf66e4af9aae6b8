package pgwire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// drainUntilReady reads raw messages without decoding them, so that the
// measurement is the server's cost, not a client's.
func drainUntilReady(br *bufio.Reader) (rows int, err error) {
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return rows, err
		}
		n := int(binary.BigEndian.Uint32(hdr[1:])) - 4
		switch hdr[0] {
		case 'D':
			rows++
		case 'E':
			return rows, fmt.Errorf("server error")
		}
		if _, err := br.Discard(n); err != nil {
			return rows, err
		}
		if hdr[0] == 'Z' {
			return rows, nil
		}
	}
}

// benchmarkSelect streams a SELECT of `rows` rows per iteration and
// reports rows per second.
func benchmarkSelect(b *testing.B, query string, rows int, extended bool) {
	ts := startServer(b, DefaultConfig(), newFakeEngine())
	r := startupRaw(b, ts.addr)
	br := bufio.NewReaderSize(r.nc, 256<<10)
	var elapsed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.nc.SetDeadline(time.Now().Add(5 * time.Minute))
		start := time.Now()
		if extended {
			r.send(&pgproto3.Parse{Query: query}, &pgproto3.Bind{ResultFormatCodes: []int16{1}},
				&pgproto3.Execute{}, &pgproto3.Sync{})
		} else {
			r.send(&pgproto3.Query{String: query})
		}
		got, err := drainUntilReady(br)
		if err != nil || got != rows {
			b.Fatalf("got %d rows, %v", got, err)
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(rows*b.N)/elapsed.Seconds(), "rows/s")
}

// BenchmarkSelectWide*: rows of (int8, text, bool, timestamptz).
func BenchmarkSelectWideText(b *testing.B) {
	benchmarkSelect(b, "SELECT * FROM wide(1000000)", 1000000, false)
}

func BenchmarkSelectWideBinary(b *testing.B) {
	benchmarkSelect(b, "SELECT * FROM wide(1000000)", 1000000, true)
}

func BenchmarkSelectFloat8Text(b *testing.B) {
	benchmarkSelect(b, "SELECT * FROM floats(100000)", 100000, false)
}

func BenchmarkSelectInt8Text(b *testing.B) {
	benchmarkSelect(b, "SELECT * FROM series(1000000)", 1000000, false)
}

// BenchmarkSelectWidePgx measures end to end with a real driver decoding
// every row (client and server share the machine's cores).
func BenchmarkSelectWidePgx(b *testing.B) {
	ts := startServer(b, DefaultConfig(), newFakeEngine())
	c := ts.connect(b, "")
	ctx := testCtx(b)
	const rows = 1000000
	var elapsed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		rs, err := c.Query(ctx, "SELECT * FROM wide(1000000)")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		var (
			id int64
			s  string
			bl bool
			ts time.Time
		)
		for rs.Next() {
			if err := rs.Scan(&id, &s, &bl, &ts); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if rs.Err() != nil || n != rows {
			b.Fatalf("%d rows, %v", n, rs.Err())
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(rows*b.N)/elapsed.Seconds(), "rows/s")
}
