package mysqlwire

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// prepared is a COM_STMT_PREPARE'd statement: an engine statement with
// $n parameters, or (sql set, st nil) a statement this package answers
// itself (statements.go), which takes no parameters.
type prepared struct {
	id         uint32
	st         pgwire.Statement
	sql        string
	nparams    int
	paramTypes []types.Type
	cols       []pgwire.Column
	boundTypes []byte            // the MySQL types the client last bound
	longData   map[uint16][]byte // COM_STMT_SEND_LONG_DATA, until the next execute
	longBytes  int
}

func (p *prepared) close() {
	if p.st != nil {
		p.st.Close()
	}
}

func (c *conn) query(ctx context.Context, text string) error {
	stmts, err := translate(text, false)
	if err != nil {
		return err
	}
	if len(stmts) == 0 {
		return newError(1065, "42000", "Query was empty")
	}
	for i, t := range stmts {
		if err := c.run(ctx, t.sql, i < len(stmts)-1); err != nil {
			return err
		}
	}
	return nil
}

// run executes one translated statement with the text protocol.
func (c *conn) run(ctx context.Context, sql string, more bool) error {
	if handled, err := c.special(ctx, sql, false, more); handled {
		return err
	}
	stmts, err := c.sess.Parse(ctx, sql, nil)
	if err != nil {
		return err
	}
	defer closeAll(stmts)
	for j, st := range stmts {
		res, err := st.Execute(ctx, nil)
		if err != nil {
			return err
		}
		if err := c.writeResult(ctx, res, false, more || j < len(stmts)-1); err != nil {
			return err
		}
	}
	return nil
}

// maxPrepared bounds a connection's open prepared statements (I9: a
// client that never closes them cannot grow the server without bound);
// MySQL's max_prepared_stmt_count is 16382 per server.
const maxPrepared = 16382

func (c *conn) prepare(ctx context.Context, text string) error {
	stmts, err := translate(text, true)
	if err != nil {
		return err
	}
	if len(stmts) != 1 {
		return newError(erParseError, "42000", "a prepared statement must be exactly one statement")
	}
	if len(c.stmts) >= maxPrepared {
		return newError(1461, "42000", fmt.Sprintf("Can't create more than max_prepared_stmt_count statements (current value: %d)", maxPrepared))
	}
	t := stmts[0]
	p := &prepared{sql: t.sql, nparams: t.nparams}
	if t.nparams > math.MaxUint16 {
		return newError(1390, "HY000", "Prepared statement contains too many placeholders")
	}
	if t.nparams > 0 || !c.isSpecial(t.sql) {
		ps, err := c.sess.Parse(ctx, t.sql, make([]uint32, t.nparams))
		if err != nil {
			return err
		}
		if len(ps) != 1 {
			closeAll(ps)
			return newError(erParseError, "42000", "a prepared statement must be exactly one statement")
		}
		desc, err := ps[0].Describe(ctx)
		if err != nil {
			ps[0].Close()
			return err
		}
		if len(desc.ParamTypes) != t.nparams {
			ps[0].Close()
			return newError(erWrongParamCount, "HY000", fmt.Sprintf("the statement has %d placeholders but the engine found %d parameters", t.nparams, len(desc.ParamTypes)))
		}
		p.st, p.paramTypes, p.cols = ps[0], desc.ParamTypes, desc.Columns
	}
	c.nextID++
	p.id = c.nextID
	c.stmts[p.id] = p
	b := []byte{0}
	b = binary.LittleEndian.AppendUint32(b, p.id)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(p.cols)))
	b = binary.LittleEndian.AppendUint16(b, uint16(p.nparams))
	b = append(b, 0, 0, 0)
	if err := c.write(b); err != nil {
		return err
	}
	if p.nparams > 0 {
		for i := 0; i < p.nparams; i++ {
			col := mysqlColumn{name: "?", mt: typeVarString, charset: collationUTF8MB4}
			if err := c.write(appendColumnDef(nil, col, "", "")); err != nil {
				return err
			}
		}
		if err := c.writeEOF(false); err != nil {
			return err
		}
	}
	if len(p.cols) > 0 {
		for _, pc := range p.cols {
			if err := c.write(appendColumnDef(nil, columnOf(pc.Name, pc.Type), c.schema, "")); err != nil {
				return err
			}
		}
		if err := c.writeEOF(false); err != nil {
			return err
		}
	}
	return nil
}

// isSpecial reports whether statements.go answers sql (without running it:
// each pattern is only matched).
func (c *conn) isSpecial(sql string) bool {
	for _, re := range []interface{ MatchString(string) bool }{reShowDatabases, reShowTables, reShowColumns, reDescribe,
		reShowCreate, reShowVariables, reShowEmpty, reUse, reSetNames} {
		if re.MatchString(sql) {
			return true
		}
	}
	if m := reSelectSys.FindStringSubmatch(sql); m != nil {
		for _, it := range splitTopLevel(m[1]) {
			if !reSysItem.MatchString(strings.TrimSpace(it)) {
				return false
			}
		}
		return true
	}
	if m := reSet.FindStringSubmatch(sql); m != nil {
		for _, it := range splitTopLevel(m[1]) {
			a := reAssign.FindStringSubmatch(strings.TrimSpace(it))
			if a == nil {
				return false
			}
			if _, known := systemVars[strings.ToLower(a[2])]; !known && a[1] != "@" && (len(a[1]) < 2 || a[1][:2] != "@@") {
				return false
			}
		}
		return true
	}
	return false
}

func (c *conn) sendLongData(body []byte) {
	r := &reader{b: body}
	id, param := r.u32(), r.u16()
	p := c.stmts[id]
	if r.err != nil || p == nil || int(param) >= p.nparams {
		return
	}
	if p.longBytes+len(r.b) > c.s.cfg.MaxPacketSize {
		p.longBytes = c.s.cfg.MaxPacketSize + 1 // reported at execute
		return
	}
	if p.longData == nil {
		p.longData = map[uint16][]byte{}
	}
	p.longData[param] = append(p.longData[param], r.b...)
	p.longBytes += len(r.b)
}

func (c *conn) execute(ctx context.Context, body []byte) error {
	r := &reader{b: body}
	id := r.u32()
	r.u8()  // cursor flags: no cursors, the result is sent whole
	r.u32() // iteration count, always 1
	if r.err != nil {
		return newError(erNetReadError, "08S01", "malformed COM_STMT_EXECUTE")
	}
	p := c.stmts[id]
	if p == nil {
		return newError(erUnknownStmtHandler, "HY000", fmt.Sprintf("Unknown prepared statement handler (%d) given to mysqld_stmt_execute", id))
	}
	defer func() { p.longData, p.longBytes = nil, 0 }()
	if p.longBytes > c.s.cfg.MaxPacketSize {
		return newError(erNetPacketTooLarge, "08S01", "long data exceeds max_allowed_packet")
	}
	if p.st == nil {
		if handled, err := c.special(ctx, p.sql, true, false); handled {
			return err
		}
		return sqlerr.Errorf(sqlerr.InternalError, "statement %q is no longer recognised", p.sql)
	}
	params := make([]types.Datum, p.nparams)
	if p.nparams > 0 {
		nulls := r.bytes((p.nparams + 7) / 8)
		if r.u8() == 1 {
			tb := r.bytes(2 * p.nparams)
			if r.err == nil {
				p.boundTypes = make([]byte, p.nparams)
				for i := range p.boundTypes {
					p.boundTypes[i] = tb[2*i] // tb[2*i+1] is the unsigned flag: Runnel's integers are signed
				}
			}
		}
		if r.err != nil || p.boundTypes == nil {
			return newError(erNetReadError, "08S01", "malformed COM_STMT_EXECUTE: parameter types missing")
		}
		for i := 0; i < p.nparams; i++ {
			if nulls[i/8]&(1<<(i%8)) != 0 {
				continue
			}
			var raw string
			var isBytes bool
			if ld, ok := p.longData[uint16(i)]; ok {
				raw, isBytes = string(ld), true
			} else {
				raw, isBytes = readParam(r, p.boundTypes[i])
				if r.err != nil {
					return newError(erNetReadError, "08S01", fmt.Sprintf("malformed COM_STMT_EXECUTE: parameter %d", i+1))
				}
			}
			d, err := c.paramDatum(raw, isBytes, p.paramTypes[i])
			if err != nil {
				return err
			}
			params[i] = d
		}
	}
	res, err := p.st.Execute(ctx, params)
	if err != nil {
		return err
	}
	return c.writeResult(ctx, res, true, false)
}

// readParam reads one binary-protocol parameter value as text (numbers
// and dates in their SQL literal form); isBytes marks string-like values.
func readParam(r *reader, mt byte) (string, bool) {
	switch mt {
	case typeTiny:
		return strconv.Itoa(int(int8(r.u8()))), false
	case typeShort, typeYear:
		return strconv.Itoa(int(int16(r.u16()))), false
	case typeLong, typeInt24:
		return strconv.Itoa(int(int32(r.u32()))), false
	case typeLongLong:
		return strconv.FormatInt(int64(r.u64()), 10), false
	case typeFloat:
		return strconv.FormatFloat(float64(math.Float32frombits(r.u32())), 'g', -1, 32), false
	case typeDouble:
		return strconv.FormatFloat(math.Float64frombits(r.u64()), 'g', -1, 64), false
	case typeDate, typeDateTime, typeTimestamp:
		n := int(r.u8())
		b := r.bytes(n)
		if r.err != nil {
			return "", false
		}
		var y, mo, d, h, mi, s, us int
		if n >= 4 {
			y, mo, d = int(binary.LittleEndian.Uint16(b)), int(b[2]), int(b[3])
		}
		if n >= 7 {
			h, mi, s = int(b[4]), int(b[5]), int(b[6])
		}
		if n >= 11 {
			us = int(binary.LittleEndian.Uint32(b[7:]))
		}
		if mt == typeDate {
			return fmt.Sprintf("%04d-%02d-%02d", y, mo, d), false
		}
		return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d.%06d", y, mo, d, h, mi, s, us), false
	case typeTime:
		n := int(r.u8())
		b := r.bytes(n)
		if r.err != nil || n == 0 {
			return "00:00:00", false
		}
		if n < 8 {
			r.fail()
			return "", false
		}
		sign := ""
		if b[0] == 1 {
			sign = "-"
		}
		days := int64(binary.LittleEndian.Uint32(b[1:]))
		us := 0
		if n >= 12 {
			us = int(binary.LittleEndian.Uint32(b[8:]))
		}
		return fmt.Sprintf("%s%02d:%02d:%02d.%06d", sign, days*24+int64(b[5]), b[6], b[7], us), false
	case typeNull:
		return "", false
	}
	s, _ := r.lenEncString()
	return s, true
}

// paramDatum types a parameter as the engine inferred ($n's type).
func (c *conn) paramDatum(raw string, isBytes bool, t types.Type) (types.Datum, error) {
	switch t.Kind {
	case types.KindNull, types.KindUnknown:
		return types.DUnknown(raw), nil
	case types.KindBytea:
		if isBytes {
			return types.DByteaString(raw), nil
		}
	case types.KindTimestamptz:
		// MySQL clients send zone-less UTC values (what this listener shows).
		if len(raw) >= 10 && raw[4] == '-' {
			if tm, err := time.ParseInLocation("2006-01-02 15:04:05.999999", raw, time.UTC); err == nil {
				return types.DTimestamptz(tm.UnixMicro()), nil
			}
		}
	}
	return types.ParseText(raw, t, &c.fmt)
}
