package pgwire

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/runneldb/runnel/internal/obs"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// prepared is a statement created by a Parse message.
type prepared struct {
	sql     string    // the query text, for Server.Sessions
	stmt    Statement // nil for an empty query
	desc    StatementDescription
	portals map[*portal]struct{} // closed with the statement
}

func (p *prepared) close() {
	for pt := range p.portals {
		pt.close()
	}
	if p.stmt != nil {
		p.stmt.Close()
		p.stmt = nil
	}
}

// portal is a bound statement, possibly partly executed.
type portal struct {
	name    string
	conn    *conn
	stmt    *prepared
	params  []types.Datum
	formats []int16 // per result column
	run     *runningResult
	closed  bool
}

func (p *portal) close() {
	if p.closed {
		return
	}
	p.closed = true
	if p.run != nil {
		p.run.close()
	}
	delete(p.stmt.portals, p)
	if p.conn.portals[p.name] == p {
		delete(p.conn.portals, p.name)
	}
}

func (c *conn) parse(ctx context.Context, m *pgproto3.Parse) error {
	if m.Name != "" {
		if _, ok := c.stmts[m.Name]; ok {
			return sqlerr.Errorf("42P05", "prepared statement %q already exists", m.Name)
		}
	} else if old := c.stmts[""]; old != nil {
		old.close()
		delete(c.stmts, "")
	}
	oids := append([]uint32(nil), m.ParameterOIDs...)
	stmts, err := c.sess.Parse(ctx, m.Query, oids)
	if err != nil {
		return err
	}
	if len(stmts) > 1 {
		for _, st := range stmts {
			st.Close()
		}
		return sqlerr.New(sqlerr.SyntaxError, "cannot insert multiple commands into a prepared statement")
	}
	p := &prepared{sql: m.Query, portals: map[*portal]struct{}{}}
	if len(stmts) == 1 {
		p.stmt = stmts[0]
		p.desc, err = p.stmt.Describe(ctx)
		if err != nil {
			p.stmt.Close()
			return err
		}
		for i, oid := range oids {
			if oid != 0 && i < len(p.desc.ParamTypes) && p.desc.ParamTypes[i].OID() != oid {
				if _, known := types.FromOID(oid); !known {
					p.stmt.Close()
					return sqlerr.Errorf(sqlerr.UndefinedObject, "type with OID %d does not exist", oid)
				}
			}
		}
	}
	c.stmts[m.Name] = p
	c.send(&pgproto3.ParseComplete{})
	return nil
}

func (c *conn) bind(ctx context.Context, m *pgproto3.Bind) error {
	st := c.stmts[m.PreparedStatement]
	if st == nil {
		return sqlerr.Errorf(sqlerr.InvalidSQLStatementName, "prepared statement %q does not exist", m.PreparedStatement)
	}
	if m.DestinationPortal != "" {
		if _, ok := c.portals[m.DestinationPortal]; ok {
			return sqlerr.Errorf("42P03", "cursor %q already exists", m.DestinationPortal)
		}
	} else if old := c.portals[""]; old != nil {
		old.close()
	}
	ptypes := st.desc.ParamTypes
	if len(m.Parameters) != len(ptypes) {
		return sqlerr.Errorf(sqlerr.ProtocolViolation,
			"bind message supplies %d parameters, but prepared statement %q requires %d",
			len(m.Parameters), m.PreparedStatement, len(ptypes))
	}
	pf := m.ParameterFormatCodes
	if len(pf) > 1 && len(pf) != len(m.Parameters) {
		return sqlerr.Errorf(sqlerr.ProtocolViolation,
			"bind message has %d parameter formats but %d parameters", len(pf), len(m.Parameters))
	}
	params := make([]types.Datum, len(m.Parameters))
	for i, raw := range m.Parameters {
		if raw == nil {
			continue
		}
		format := int16(0)
		if len(pf) == 1 {
			format = pf[0]
		} else if len(pf) > 1 {
			format = pf[i]
		}
		var d types.Datum
		var err error
		switch format {
		case pgproto3.TextFormat:
			d, err = parseText(string(raw), ptypes[i], &c.fopts)
		case pgproto3.BinaryFormat:
			d, err = parseBinary(raw, ptypes[i])
		default:
			return sqlerr.Errorf(sqlerr.ProtocolViolation, "unsupported format code: %d", format)
		}
		if err != nil {
			if e := sqlerr.From(err); e != nil && e.Detail == "" {
				return e.WithDetail("parameter $%d", i+1)
			}
			return err
		}
		params[i] = d
	}
	formats, err := resultFormats(m.ResultFormatCodes, len(st.desc.Columns))
	if err != nil {
		return err
	}
	p := &portal{name: m.DestinationPortal, conn: c, stmt: st, params: params, formats: formats}
	st.portals[p] = struct{}{}
	c.portals[p.name] = p
	c.send(&pgproto3.BindComplete{})
	return nil
}

// resultFormats expands Bind's result format codes to one per column.
func resultFormats(codes []int16, ncols int) ([]int16, error) {
	out := make([]int16, ncols)
	switch {
	case len(codes) == 0:
	case len(codes) == 1:
		for i := range out {
			out[i] = codes[0]
		}
	case len(codes) == ncols:
		copy(out, codes)
	default:
		return nil, sqlerr.Errorf(sqlerr.ProtocolViolation,
			"bind message has %d result formats but query has %d columns", len(codes), ncols)
	}
	for _, f := range out {
		if f != pgproto3.TextFormat && f != pgproto3.BinaryFormat {
			return nil, sqlerr.Errorf(sqlerr.ProtocolViolation, "unsupported format code: %d", f)
		}
	}
	return out, nil
}

func (c *conn) describe(ctx context.Context, m *pgproto3.Describe) error {
	switch m.ObjectType {
	case 'S':
		st := c.stmts[m.Name]
		if st == nil {
			return sqlerr.Errorf(sqlerr.InvalidSQLStatementName, "prepared statement %q does not exist", m.Name)
		}
		oids := make([]uint32, len(st.desc.ParamTypes))
		for i, t := range st.desc.ParamTypes {
			oids[i] = t.OID()
		}
		c.send(&pgproto3.ParameterDescription{ParameterOIDs: oids})
		if st.desc.Columns == nil {
			c.send(&pgproto3.NoData{})
		} else {
			c.sendRowDescription(st.desc.Columns, make([]int16, len(st.desc.Columns)))
		}
	case 'P':
		p := c.portals[m.Name]
		if p == nil {
			return sqlerr.Errorf(sqlerr.InvalidCursorName, "portal %q does not exist", m.Name)
		}
		if p.stmt.desc.Columns == nil {
			c.send(&pgproto3.NoData{})
		} else {
			c.sendRowDescription(p.stmt.desc.Columns, p.formats)
		}
	default:
		return sqlerr.Errorf(sqlerr.ProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType)
	}
	return nil
}

func (c *conn) execute(ctx context.Context, m *pgproto3.Execute) error {
	p := c.portals[m.Portal]
	if p == nil {
		return sqlerr.Errorf(sqlerr.InvalidCursorName, "portal %q does not exist", m.Portal)
	}
	if p.stmt.stmt == nil {
		c.send(&pgproto3.EmptyQueryResponse{})
		return nil
	}
	if p.run != nil && p.run.done {
		// PostgreSQL answers a finished portal with an empty completion.
		tag := p.run.res.Tag
		if tag == "" || p.run.res.Columns != nil && p.run.res.Copy == nil {
			tag = "SELECT 0"
		}
		c.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
		return nil
	}
	start := c.setActivity(p.stmt.sql)
	defer c.endActivity()
	if p.run == nil {
		res, err := p.stmt.stmt.Execute(ctx, p.params)
		if err != nil {
			return err
		}
		formats := p.formats
		if len(formats) != len(res.Columns) {
			// The shape changed since Describe (or the statement has no
			// described columns): fall back to text, the only format that
			// needs no agreement.
			formats = make([]int16, len(res.Columns))
		}
		p.run = &runningResult{res: res, formats: formats}
	}
	suspended, err := c.runResult(ctx, p.run, int64(m.MaxRows))
	if err != nil {
		p.close()
		return err
	}
	if !suspended {
		obs.StatementDone(p.run.res.Tag, time.Since(start))
	}
	return nil
}

func (c *conn) closeObject(m *pgproto3.Close) error {
	switch m.ObjectType {
	case 'S':
		if st := c.stmts[m.Name]; st != nil {
			st.close()
			delete(c.stmts, m.Name)
		}
	case 'P':
		if p := c.portals[m.Name]; p != nil {
			p.close()
		}
	default:
		return sqlerr.Errorf(sqlerr.ProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType)
	}
	c.send(&pgproto3.CloseComplete{})
	return nil
}
