package pgwire

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// COPY binary format (PostgreSQL "COPY ... (FORMAT binary)", what pgx's
// CopyFrom and other drivers' bulk paths send):
//
//	header   11-byte signature "PGCOPY\n\377\r\n\0"
//	         int32 flags (bit 16: OIDs included — refused; bits 17-31 are
//	         critical and must be 0; bits 0-15 are ignored)
//	         int32 length of the header extension, then that many bytes (skipped)
//	tuple    int16 field count (must equal the number of columns)
//	         per field: int32 length (-1 = NULL), then the value in the
//	         type's binary ("send") format (types.ParseBinary)
//	trailer  int16 -1
//
// Tuples may be split across CopyData messages at any byte. Malformed
// framing is 22P04 bad_copy_file_format, a malformed value 22P03
// invalid_binary_representation (or the type's range error), each with the
// row and column in the detail, as PostgreSQL reports them.

var copyBinarySignature = []byte("PGCOPY\n\xff\r\n\x00")

const (
	copyBinaryHeaderLen = 11 + 4 + 4
	copyFlagOIDs        = 1 << 16
	copyCriticalFlags   = 0xFFFF0000
)

// rowDecoder turns COPY data chunks into rows (copyParser for text and
// CSV, copyBinaryParser for binary). Returned slices are reused by the
// next call.
type rowDecoder interface {
	feed(data []byte) ([]types.Row, error)
	finish() ([]types.Row, error)
}

// copyBinaryParser decodes the binary COPY format incrementally.
type copyBinaryParser struct {
	cols []Column
	slab rowSlab

	buf        []byte
	headerDone bool
	ended      bool // saw the trailer
	row        int  // 1-based number of the next tuple, for errors
	rows       []types.Row
}

func newCopyBinaryParser(cols []Column) *copyBinaryParser {
	return &copyBinaryParser{cols: cols, row: 1}
}

func (p *copyBinaryParser) errorf(format string, args ...any) *sqlerr.Error {
	return sqlerr.Errorf(codeBadCopyFileFormat, format, args...).WithDetail("COPY row %d", p.row)
}

func (p *copyBinaryParser) feed(data []byte) ([]types.Row, error) {
	p.rows = p.rows[:0]
	if p.ended {
		if len(data) > 0 {
			return nil, p.errorf("received copy data after EOF marker")
		}
		return nil, nil
	}
	p.buf = append(p.buf, data...)
	start := 0
	if !p.headerDone {
		n, err := p.header()
		if err != nil || n == 0 {
			return nil, err
		}
		start = n
		p.headerDone = true
	}
	for start < len(p.buf) {
		n, err := p.tuple(p.buf[start:])
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		start += n
		if p.ended {
			if start < len(p.buf) {
				return nil, p.errorf("received copy data after EOF marker")
			}
			break
		}
	}
	n := copy(p.buf, p.buf[start:])
	p.buf = p.buf[:n]
	return p.rows, nil
}

// header checks the file header at the start of buf and returns its
// length, or 0 if buf does not hold all of it yet.
func (p *copyBinaryParser) header() (int, error) {
	b := p.buf
	if len(b) < len(copyBinarySignature) {
		if !bytes.HasPrefix(copyBinarySignature, b) {
			return 0, p.errorf("COPY file signature not recognized")
		}
		return 0, nil
	}
	if !bytes.Equal(b[:len(copyBinarySignature)], copyBinarySignature) {
		return 0, p.errorf("COPY file signature not recognized")
	}
	if len(b) < copyBinaryHeaderLen {
		return 0, nil
	}
	flags := binary.BigEndian.Uint32(b[11:])
	if flags&copyFlagOIDs != 0 {
		return 0, p.errorf("invalid COPY file header (WITH OIDS)")
	}
	if flags&copyCriticalFlags&^copyFlagOIDs != 0 {
		return 0, p.errorf("unrecognized critical flags in COPY file header")
	}
	ext := int32(binary.BigEndian.Uint32(b[15:]))
	if ext < 0 {
		return 0, p.errorf("invalid COPY file header (missing length)")
	}
	if int64(len(b)) < copyBinaryHeaderLen+int64(ext) {
		return 0, nil
	}
	return copyBinaryHeaderLen + int(ext), nil
}

// tuple decodes one tuple (or the trailer) at the start of b and returns
// its length, or 0 if b does not hold all of it yet.
func (p *copyBinaryParser) tuple(b []byte) (int, error) {
	if len(b) < 2 {
		return 0, nil
	}
	count := int16(binary.BigEndian.Uint16(b))
	if count == -1 {
		p.ended = true
		return 2, nil
	}
	if int(count) != len(p.cols) {
		return 0, p.errorf("row field count is %d, expected %d", count, len(p.cols))
	}
	// Find the end first, so that a tuple split across messages is
	// decoded once.
	pos := 2
	for i := 0; i < int(count); i++ {
		if len(b) < pos+4 {
			return 0, nil
		}
		l := int32(binary.BigEndian.Uint32(b[pos:]))
		pos += 4
		if l == -1 {
			continue
		}
		if l < -1 {
			return 0, p.errorf("invalid field size %d for column %q", l, p.cols[i].Name)
		}
		if int64(len(b)) < int64(pos)+int64(l) {
			return 0, nil
		}
		pos += int(l)
	}
	row := p.slab.row(len(p.cols))
	at := 2
	for i := range row {
		l := int32(binary.BigEndian.Uint32(b[at:]))
		at += 4
		if l == -1 {
			continue
		}
		d, err := parseBinary(b[at:at+int(l)], p.cols[i].Type)
		if err != nil {
			if e := sqlerr.From(err); e != nil {
				return 0, e.WithDetail("COPY row %d, column %s", p.row, p.cols[i].Name)
			}
			return 0, err
		}
		row[i] = d
		at += int(l)
	}
	p.rows = append(p.rows, row)
	p.row++
	return pos, nil
}

// finish is called at CopyDone: a header or tuple left incomplete is an
// error. A missing trailer is accepted, as PostgreSQL does.
func (p *copyBinaryParser) finish() ([]types.Row, error) {
	p.rows = p.rows[:0]
	switch n := len(p.buf); {
	case !p.headerDone && n < len(copyBinarySignature):
		return nil, p.errorf("COPY file signature not recognized")
	case !p.headerDone && n < 15:
		return nil, p.errorf("invalid COPY file header (missing flags)")
	case !p.headerDone && n < copyBinaryHeaderLen:
		return nil, p.errorf("invalid COPY file header (missing length)")
	case !p.headerDone:
		return nil, p.errorf("invalid COPY file header (wrong length)")
	case n > 0:
		return nil, p.errorf("unexpected EOF in COPY data")
	}
	return p.rows, nil
}

// copyBinaryFormatter writes COPY TO STDOUT (FORMAT binary).
type copyBinaryFormatter struct {
	cols []Column
}

func (f *copyBinaryFormatter) appendHeader(buf []byte) []byte {
	buf = append(buf, copyBinarySignature...)
	return append(buf, 0, 0, 0, 0, 0, 0, 0, 0) // flags, extension length
}

func (f *copyBinaryFormatter) appendRow(buf []byte, row types.Row) ([]byte, error) {
	if len(row) != len(f.cols) {
		return buf, fmt.Errorf("COPY TO: row has %d values for %d columns", len(row), len(f.cols))
	}
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(f.cols)))
	for i, d := range row {
		if d.IsNull() {
			buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF)
			continue
		}
		lenAt := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		var err error
		if buf, err = appendBinary(buf, d, f.cols[i].Type); err != nil {
			return buf, err
		}
		binary.BigEndian.PutUint32(buf[lenAt:], uint32(len(buf)-lenAt-4))
	}
	return buf, nil
}

func (f *copyBinaryFormatter) appendTrailer(buf []byte) []byte {
	return append(buf, 0xFF, 0xFF)
}
