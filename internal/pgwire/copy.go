package pgwire

import (
	"bytes"
	"fmt"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// COPY data formats (PostgreSQL "COPY ... WITH (FORMAT ...)").
//
// Text: one row per line, fields separated by the delimiter (tab), NULL
// written as \N, and backslash escapes for the delimiter, newline, carriage
// return, backslash and the C escapes \b \f \n \r \t \v, \ooo (octal) and
// \xhh (hex). The null string is matched before escapes are processed.
//
// CSV: fields separated by the delimiter (comma), quoted with the quote
// character when they contain the delimiter, a quote, CR or LF; a quote
// inside a quoted field is preceded by the escape character (by default
// the quote itself, i.e. doubled). An unquoted field equal to the null
// string (default empty) is NULL, a quoted one never is. Quoted fields may
// span lines. HEADER skips the first line on input and writes column names
// on output.
//
// In both formats a line holding only \. ends the data.

// bad_copy_file_format
const codeBadCopyFileFormat = "22P04"

// CopyFormat is a COPY data format.
type CopyFormat uint8

const (
	CopyText CopyFormat = iota
	CopyCSV
	CopyBinary // see copy_binary.go
)

// CopyOptions are the options of a COPY statement. Start from
// DefaultCopyOptions and override what the statement sets.
type CopyOptions struct {
	Format    CopyFormat
	Delimiter byte
	Null      string
	Header    bool
	Quote     byte // CSV only
	Escape    byte // CSV only
}

// DefaultCopyOptions returns PostgreSQL's defaults for format f.
func DefaultCopyOptions(f CopyFormat) CopyOptions {
	if f == CopyCSV {
		return CopyOptions{Format: CopyCSV, Delimiter: ',', Null: "", Quote: '"', Escape: '"'}
	}
	return CopyOptions{Format: f, Delimiter: '\t', Null: `\N`}
}

func (o *CopyOptions) validate() error {
	switch o.Format {
	case CopyText, CopyCSV:
	case CopyBinary:
		return nil
	default:
		return sqlerr.Errorf(sqlerr.InvalidParameterValue, "COPY format %d not recognized", o.Format)
	}
	if o.Delimiter == 0 || o.Delimiter == '\n' || o.Delimiter == '\r' {
		return sqlerr.New(sqlerr.InvalidParameterValue, "COPY delimiter cannot be newline or carriage return")
	}
	if o.Format == CopyCSV {
		if o.Quote == 0 || o.Escape == 0 {
			return sqlerr.New(sqlerr.InvalidParameterValue, "COPY quote and escape must be set for CSV")
		}
		if o.Quote == o.Delimiter {
			return sqlerr.New(sqlerr.InvalidParameterValue, "COPY delimiter and quote must be different")
		}
	} else if o.Delimiter == '\\' {
		return sqlerr.New(sqlerr.InvalidParameterValue, "COPY delimiter cannot be backslash")
	}
	return nil
}

// copyParser turns a stream of COPY data chunks into rows. Records may be
// split across chunks at any byte.
type copyParser struct {
	opts  CopyOptions
	cols  []Column
	fopts *formatOptions
	slab  rowSlab

	buf []byte
	// scan state for the record at the start of buf
	pos     int
	inQuote bool

	line       int // 1-based line number of the next record, for errors
	headerDone bool
	ended      bool // saw \.

	fields []copyField
	unesc  []byte
	rows   []types.Row
}

type copyField struct {
	val  []byte
	null bool
}

func newCopyParser(opts CopyOptions, cols []Column, fopts *formatOptions) *copyParser {
	return &copyParser{opts: opts, cols: cols, fopts: fopts, line: 1, headerDone: !opts.Header}
}

// feed consumes a chunk and returns the rows completed by it; the slice is
// reused by the next call.
// rowSlab hands out rows carved from one larger allocation: a COPY keeps
// every row until it ends, so one allocation per rowSlabRows rows instead
// of one per row costs nothing in retained memory and saves the allocator
// and the garbage collector most of their work.
type rowSlab struct{ free []types.Datum }

const rowSlabRows = 256

func (s *rowSlab) row(n int) types.Row {
	if n == 0 {
		return types.Row{}
	}
	if len(s.free) < n {
		s.free = make([]types.Datum, n*rowSlabRows)
	}
	r := s.free[:n:n]
	s.free = s.free[n:]
	return r
}

func (p *copyParser) feed(data []byte) ([]types.Row, error) {
	p.rows = p.rows[:0]
	if p.ended {
		return nil, nil
	}
	p.buf = append(p.buf, data...)
	start := 0
	for !p.ended {
		end, ok := p.scan(start)
		if !ok {
			break
		}
		rec := p.buf[start:end]
		start = end + 1
		if err := p.record(rec); err != nil {
			return nil, err
		}
	}
	// Keep the incomplete tail, with the scan position relative to it.
	n := copy(p.buf, p.buf[start:])
	p.buf = p.buf[:n]
	p.pos -= start
	if p.ended {
		p.buf = p.buf[:0]
	}
	return p.rows, nil
}

// finish is called at CopyDone: an unterminated last line is a record.
func (p *copyParser) finish() ([]types.Row, error) {
	p.rows = p.rows[:0]
	if p.ended || len(p.buf) == 0 {
		return p.rows, nil
	}
	if p.inQuote {
		return nil, p.errorf("unterminated CSV quoted field")
	}
	rec := p.buf
	p.buf = nil
	if err := p.record(rec); err != nil {
		return nil, err
	}
	return p.rows, nil
}

// scan finds the end ('\n' outside CSV quotes) of the record starting at
// start, resuming from the saved position.
func (p *copyParser) scan(start int) (int, bool) {
	if p.pos < start {
		p.pos, p.inQuote = start, false
	}
	if p.opts.Format != CopyCSV {
		if i := bytes.IndexByte(p.buf[p.pos:], '\n'); i >= 0 {
			end := p.pos + i
			p.pos = end + 1
			return end, true
		}
		p.pos = len(p.buf)
		return 0, false
	}
	q, esc := p.opts.Quote, p.opts.Escape
	for i := p.pos; i < len(p.buf); i++ {
		c := p.buf[i]
		switch {
		case p.inQuote && c == esc && esc != q:
			if i+1 >= len(p.buf) {
				p.pos = i // wait for the escaped byte
				return 0, false
			}
			i++
		case c == q:
			p.inQuote = !p.inQuote
		case c == '\n' && !p.inQuote:
			p.pos = i + 1
			return i, true
		}
	}
	p.pos = len(p.buf)
	return 0, false
}

func (p *copyParser) errorf(format string, args ...any) *sqlerr.Error {
	return sqlerr.Errorf(codeBadCopyFileFormat, format, args...).WithDetail("COPY line %d", p.line)
}

func (p *copyParser) record(rec []byte) error {
	defer func() { p.line++ }()
	if len(rec) > 0 && rec[len(rec)-1] == '\r' {
		rec = rec[:len(rec)-1]
	}
	if string(rec) == `\.` {
		p.ended = true
		return nil
	}
	if !p.headerDone {
		p.headerDone = true
		return nil
	}
	var err error
	if p.opts.Format == CopyCSV {
		err = p.splitCSV(rec)
	} else {
		err = p.splitText(rec)
	}
	if err != nil {
		return err
	}
	if len(p.fields) > len(p.cols) {
		return p.errorf("extra data after last expected column")
	}
	if len(p.fields) < len(p.cols) {
		if len(p.cols) == 0 {
			return nil
		}
		return p.errorf("missing data for column %q", p.cols[len(p.fields)].Name)
	}
	row := p.slab.row(len(p.cols))
	for i, f := range p.fields {
		if f.null {
			continue
		}
		d, err := parseText(string(f.val), p.cols[i].Type, p.fopts)
		if err != nil {
			if e := sqlerr.From(err); e != nil {
				return e.WithDetail("COPY line %d, column %s", p.line, p.cols[i].Name)
			}
			return err
		}
		row[i] = d
	}
	p.rows = append(p.rows, row)
	return nil
}

// splitText splits a text-format line into de-escaped fields. Field values
// point into p.unesc, which is rebuilt per record.
func (p *copyParser) splitText(rec []byte) error {
	p.fields = p.fields[:0]
	p.unesc = p.unesc[:0]
	if len(rec) == 0 && len(p.cols) == 0 {
		return nil
	}
	delim := p.opts.Delimiter
	type span struct{ from, to int }
	var spans []span
	for {
		// find the end of this raw field: an unescaped delimiter
		i := 0
		for i < len(rec) && rec[i] != delim {
			if rec[i] == '\\' && i+1 < len(rec) {
				i++
			}
			i++
		}
		raw := rec[:min(i, len(rec))]
		if string(raw) == p.opts.Null {
			p.fields = append(p.fields, copyField{null: true})
			spans = append(spans, span{-1, -1})
		} else {
			from := len(p.unesc)
			if err := p.unescapeText(raw); err != nil {
				return err
			}
			p.fields = append(p.fields, copyField{})
			spans = append(spans, span{from, len(p.unesc)})
		}
		if i >= len(rec) {
			break
		}
		rec = rec[i+1:]
	}
	for k, s := range spans {
		if s.from >= 0 {
			p.fields[k].val = p.unesc[s.from:s.to]
		}
	}
	return nil
}

func (p *copyParser) unescapeText(raw []byte) error {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			p.unesc = append(p.unesc, c)
			continue
		}
		i++
		if i >= len(raw) {
			return p.errorf("end-of-copy marker corrupt")
		}
		c = raw[i]
		switch c {
		case 'b':
			p.unesc = append(p.unesc, '\b')
		case 'f':
			p.unesc = append(p.unesc, '\f')
		case 'n':
			p.unesc = append(p.unesc, '\n')
		case 'r':
			p.unesc = append(p.unesc, '\r')
		case 't':
			p.unesc = append(p.unesc, '\t')
		case 'v':
			p.unesc = append(p.unesc, '\v')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(c - '0')
			for k := 0; k < 2 && i+1 < len(raw) && raw[i+1] >= '0' && raw[i+1] <= '7'; k++ {
				i++
				v = v*8 + int(raw[i]-'0')
			}
			p.unesc = append(p.unesc, byte(v))
		case 'x':
			v, n := 0, 0
			for n < 2 && i+1 < len(raw) && isHex(raw[i+1]) {
				i++
				v = v*16 + hexVal(raw[i])
				n++
			}
			if n == 0 {
				p.unesc = append(p.unesc, 'x')
			} else {
				p.unesc = append(p.unesc, byte(v))
			}
		default:
			p.unesc = append(p.unesc, c)
		}
	}
	return nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}

// splitCSV splits one CSV record (which may contain quoted newlines).
func (p *copyParser) splitCSV(rec []byte) error {
	p.fields = p.fields[:0]
	p.unesc = p.unesc[:0]
	if len(rec) == 0 && len(p.cols) == 0 {
		return nil
	}
	delim, q, esc := p.opts.Delimiter, p.opts.Quote, p.opts.Escape
	type span struct {
		from, to int
		null     bool
	}
	var spans []span
	i := 0
	for {
		from := len(p.unesc)
		quoted := false
		inQuote := false
		for i < len(rec) {
			c := rec[i]
			if inQuote {
				if c == esc && i+1 < len(rec) && (rec[i+1] == q || rec[i+1] == esc) && (esc != q || rec[i+1] == q) {
					p.unesc = append(p.unesc, rec[i+1])
					i += 2
					continue
				}
				if c == q {
					inQuote = false
					i++
					continue
				}
				p.unesc = append(p.unesc, c)
				i++
				continue
			}
			if c == delim {
				break
			}
			if c == q {
				inQuote, quoted = true, true
				i++
				continue
			}
			p.unesc = append(p.unesc, c)
			i++
		}
		if inQuote {
			return p.errorf("unterminated CSV quoted field")
		}
		val := p.unesc[from:]
		null := !quoted && string(val) == p.opts.Null
		spans = append(spans, span{from, len(p.unesc), null})
		if i >= len(rec) {
			break
		}
		i++ // delimiter
	}
	for _, s := range spans {
		p.fields = append(p.fields, copyField{val: p.unesc[s.from:s.to], null: s.null})
	}
	return nil
}

// copyFormatter renders rows as COPY data lines.
type copyFormatter struct {
	opts    CopyOptions
	cols    []Column
	fopts   *formatOptions
	scratch []byte
}

// appendHeader appends the header line (CSV and text with HEADER).
func (f *copyFormatter) appendHeader(buf []byte) []byte {
	for i, c := range f.cols {
		if i > 0 {
			buf = append(buf, f.opts.Delimiter)
		}
		buf = f.appendField(buf, []byte(c.Name))
	}
	return append(buf, '\n')
}

// appendRow appends one data line for row.
func (f *copyFormatter) appendRow(buf []byte, row types.Row) ([]byte, error) {
	if len(row) != len(f.cols) {
		return buf, fmt.Errorf("COPY TO: row has %d values for %d columns", len(row), len(f.cols))
	}
	for i, d := range row {
		if i > 0 {
			buf = append(buf, f.opts.Delimiter)
		}
		if d.IsNull() {
			buf = append(buf, f.opts.Null...)
			continue
		}
		var err error
		f.scratch, err = appendText(f.scratch[:0], d, f.cols[i].Type, f.fopts)
		if err != nil {
			return buf, err
		}
		buf = f.appendField(buf, f.scratch)
	}
	return append(buf, '\n'), nil
}

func (f *copyFormatter) appendField(buf, v []byte) []byte {
	if f.opts.Format == CopyCSV {
		return f.appendCSVField(buf, v)
	}
	for _, c := range v {
		switch c {
		case '\\':
			buf = append(buf, '\\', '\\')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			if f.opts.Delimiter == '\t' {
				buf = append(buf, '\\', 't')
			} else {
				buf = append(buf, c)
			}
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\v':
			buf = append(buf, '\\', 'v')
		default:
			if c == f.opts.Delimiter {
				buf = append(buf, '\\')
			}
			buf = append(buf, c)
		}
	}
	return buf
}

func (f *copyFormatter) appendCSVField(buf, v []byte) []byte {
	q, esc := f.opts.Quote, f.opts.Escape
	need := len(v) == 0 && f.opts.Null == "" || string(v) == f.opts.Null || string(v) == `\.`
	for _, c := range v {
		if c == f.opts.Delimiter || c == q || c == esc || c == '\n' || c == '\r' {
			need = true
			break
		}
	}
	if !need {
		return append(buf, v...)
	}
	buf = append(buf, q)
	for _, c := range v {
		if c == q || c == esc {
			buf = append(buf, esc)
		}
		buf = append(buf, c)
	}
	return append(buf, q)
}
