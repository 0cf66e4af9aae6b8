package pgwire

import (
	"encoding/binary"
	"testing"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// binCopy builds binary COPY data: the header, then each tuple as a list
// of fields (nil = NULL), then the trailer unless noTrailer.
func binCopy(tuples [][][]byte, noTrailer bool) []byte {
	b := append([]byte{}, copyBinarySignature...)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 3, 'e', 'x', 't') // flags, a 3-byte extension
	for _, tup := range tuples {
		b = binary.BigEndian.AppendUint16(b, uint16(len(tup)))
		for _, f := range tup {
			if f == nil {
				b = binary.BigEndian.AppendUint32(b, 0xFFFFFFFF)
				continue
			}
			b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
			b = append(b, f...)
		}
	}
	if !noTrailer {
		b = append(b, 0xFF, 0xFF)
	}
	return b
}

func int4(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func parseBinaryAll(data []byte, chunk int) (string, error) {
	p := newCopyBinaryParser(copyTestCols)
	var all []types.Row
	for len(data) > 0 {
		n := min(chunk, len(data))
		rows, err := p.feed(data[:n])
		if err != nil {
			return "", err
		}
		for _, r := range rows {
			all = append(all, r.Copy())
		}
		data = data[n:]
	}
	rows, err := p.finish()
	if err != nil {
		return "", err
	}
	return renderRows(append(all, rows...)), nil
}

func TestCopyBinaryParser(t *testing.T) {
	good := binCopy([][][]byte{{int4(1), []byte("x")}, {int4(2), nil}, {nil, []byte("")}}, false)
	cases := []struct {
		name string
		in   []byte
		want string // rendered rows, or "ERR <code> <message>"
	}{
		{"rows", good, "(1, x) (2, NULL) (NULL, )"},
		{"no trailer", binCopy([][][]byte{{int4(7), []byte("y")}}, true), "(7, y)"},
		{"empty", nil, "ERR 22P04 COPY file signature not recognized"},
		{"bad signature", append([]byte("PGCOPY\n\xff\r\n\x01"), good[11:]...), "ERR 22P04 COPY file signature not recognized"},
		{"text sent as binary", []byte("1\tx\n"), "ERR 22P04 COPY file signature not recognized"},
		{"header cut in flags", good[:13], "ERR 22P04 invalid COPY file header (missing flags)"},
		{"header cut in extension", good[:20], "ERR 22P04 invalid COPY file header (wrong length)"},
		{"with oids", func() []byte { b := append([]byte{}, good...); b[12] = 1; return b }(), "ERR 22P04 invalid COPY file header (WITH OIDS)"},
		{"critical flag", func() []byte { b := append([]byte{}, good...); b[11] = 0x80; return b }(), "ERR 22P04 unrecognized critical flags in COPY file header"},
		{"too few fields", binCopy([][][]byte{{int4(1)}}, false), "ERR 22P04 row field count is 1, expected 2"},
		{"too many fields", binCopy([][][]byte{{int4(1), nil, nil}}, false), "ERR 22P04 row field count is 3, expected 2"},
		{"tuple cut", good[:len(good)-5], "ERR 22P04 unexpected EOF in COPY data"},
		{"negative field size", func() []byte {
			b := binCopy([][][]byte{{int4(1), []byte("x")}}, false)
			binary.BigEndian.PutUint32(b[22+2:], 0xFFFFFFFE)
			return b
		}(), "ERR 22P04 invalid field size -2 for column \"a\""},
		{"data after trailer", append(append([]byte{}, good...), 0, 2), "ERR 22P04 received copy data after EOF marker"},
		{"int4 of 3 bytes", binCopy([][][]byte{{[]byte{0, 0, 1}, nil}}, false), "ERR 22P03 incorrect binary data format: 3 bytes for type integer, want 4"},
		{"invalid utf8", binCopy([][][]byte{{int4(1), []byte{0xff}}}, false), "ERR 22021"},
	}
	for _, c := range cases {
		for _, chunk := range []int{1, 3, 1 << 20} {
			got, err := parseBinaryAll(c.in, chunk)
			if err != nil {
				e := sqlerr.From(err)
				if e == nil {
					t.Fatalf("%s (chunk %d): error without SQLSTATE: %v", c.name, chunk, err)
				}
				got = "ERR " + e.Code + " " + e.Message
			}
			if got != c.want && !(len(c.want) == 9 && len(got) >= 9 && got[:9] == c.want) {
				t.Errorf("%s (chunk %d): got %q; want %q", c.name, chunk, got, c.want)
			}
		}
	}
}

// Every value COPY TO (FORMAT binary) writes is read back by COPY FROM.
func TestCopyBinaryRoundTrip(t *testing.T) {
	f := &copyBinaryFormatter{cols: copyTestCols}
	buf := f.appendHeader(nil)
	in := []types.Row{{types.DInt32(-5), types.DVarchar("a\tb\n")}, {types.NullDatum, types.NullDatum}}
	for _, r := range in {
		var err error
		if buf, err = f.appendRow(buf, r); err != nil {
			t.Fatal(err)
		}
	}
	buf = f.appendTrailer(buf)
	got, err := parseBinaryAll(buf, 5)
	if err != nil {
		t.Fatal(err)
	}
	if want := renderRows(in); got != want {
		t.Fatalf("got %q; want %q", got, want)
	}
}
