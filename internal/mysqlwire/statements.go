package mysqlwire

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// The statements MySQL clients send that the engine has no syntax for.
// Each is recognised on the translated text (translate.go: identifiers are
// "quoted", strings 'quoted') and answered here, mostly by running a query
// over the engine's own catalogs, so that what SHOW TABLES lists is what
// pg_catalog and information_schema list:
//
//	SHOW DATABASES | SCHEMAS [LIKE 'p']             information_schema.schemata
//	SHOW [FULL] TABLES [FROM db] [LIKE 'p']         information_schema.tables + pg_matviews
//	SHOW [FULL] COLUMNS|FIELDS FROM t [FROM db], DESCRIBE t, DESC t
//	                                                information_schema.columns
//	SHOW CREATE TABLE|VIEW t                        the definition Runnel stored
//	SHOW [SESSION|GLOBAL] VARIABLES [LIKE 'p'], SHOW WARNINGS | ERRORS | STATUS
//	USE db                                          SET search_path
//	SELECT @@var, DATABASE(), USER(), VERSION(), CONNECTION_ID() [LIMIT n]
//	SET NAMES ..., SET [SESSION] mysql_var = v, SET @@var = v
//
// MySQL's databases are the schemas of the Runnel database the listener
// serves (Config.Database, default dev).

const (
	reIdent  = `(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)`
	reQIdent = reIdent + `(?:\s*\.\s*` + reIdent + `)?`
	reLit    = `'(?:[^']|'')*'`
)

var (
	reShowDatabases = regexp.MustCompile(`(?is)^SHOW\s+(?:DATABASES|SCHEMAS)(?:\s+LIKE\s+(` + reLit + `))?$`)
	reShowTables    = regexp.MustCompile(`(?is)^SHOW\s+(FULL\s+)?TABLES(?:\s+(?:FROM|IN)\s+(` + reIdent + `))?(?:\s+LIKE\s+(` + reLit + `))?$`)
	reShowColumns   = regexp.MustCompile(`(?is)^SHOW\s+(?:FULL\s+)?(?:COLUMNS|FIELDS)\s+(?:FROM|IN)\s+(` + reQIdent + `)(?:\s+(?:FROM|IN)\s+(` + reIdent + `))?(?:\s+LIKE\s+(` + reLit + `))?$`)
	reDescribe      = regexp.MustCompile(`(?is)^(?:DESCRIBE|DESC|EXPLAIN)\s+(` + reQIdent + `)$`)
	reShowCreate    = regexp.MustCompile(`(?is)^SHOW\s+CREATE\s+(TABLE|VIEW)\s+(` + reQIdent + `)$`)
	reShowVariables = regexp.MustCompile(`(?is)^SHOW\s+(?:SESSION\s+|GLOBAL\s+|LOCAL\s+)?VARIABLES(?:\s+LIKE\s+(` + reLit + `)|\s+WHERE\s+variable_name\s*=\s*(` + reLit + `))?$`)
	reShowEmpty     = regexp.MustCompile(`(?is)^SHOW\s+(?:(?:SESSION\s+|GLOBAL\s+)?STATUS(?:\s+LIKE\s+` + reLit + `)?|WARNINGS|ERRORS)(?:\s+LIMIT\s+[0-9, ]+)?$`)
	reUse           = regexp.MustCompile(`(?is)^USE\s+(` + reIdent + `)$`)
	reSetNames      = regexp.MustCompile(`(?is)^SET\s+(?:NAMES|CHARACTER\s+SET|CHARSET)\s`)
	reSet           = regexp.MustCompile(`(?is)^SET\s+(.+)$`)
	reAssign        = regexp.MustCompile(`(?is)^(@@(?:session\.|local\.|global\.)?|(?:SESSION|LOCAL|GLOBAL)\s+|@)?([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|=)\s*(.+)$`)
	reSelectSys     = regexp.MustCompile(`(?is)^SELECT\s+(.+?)(?:\s+LIMIT\s+[0-9]+)?$`)
	reSysItem       = regexp.MustCompile(`(?is)^(@@(?:session\.|local\.|global\.)?[A-Za-z_][A-Za-z0-9_]*|(?:DATABASE|SCHEMA|USER|CURRENT_USER|SESSION_USER|SYSTEM_USER|VERSION|CONNECTION_ID|LAST_INSERT_ID)\s*\(\s*\))(?:\s+(?:AS\s+)?(` + reIdent + `|` + reLit + `))?$`)
)

// sysVar is a MySQL system variable clients read; num ones are integers.
type sysVar struct {
	value string
	num   bool
}

// systemVars are the variables MySQL clients and drivers ask for, with the
// values that describe this server truthfully (the engine's isolation is
// PostgreSQL's repeatable read, its text utf8mb4, its zone UTC).
var systemVars = map[string]sysVar{
	"version":                  {ServerVersion, false},
	"version_comment":          {"Runnel", false},
	"version_compile_os":       {"Linux", false},
	"max_allowed_packet":       {strconv.Itoa(DefaultMaxPacketSize), true},
	"autocommit":               {"1", true},
	"sql_mode":                 {"", false},
	"character_set_client":     {"utf8mb4", false},
	"character_set_connection": {"utf8mb4", false},
	"character_set_results":    {"utf8mb4", false},
	"character_set_server":     {"utf8mb4", false},
	"character_set_database":   {"utf8mb4", false},
	"collation_connection":     {"utf8mb4_general_ci", false},
	"collation_server":         {"utf8mb4_general_ci", false},
	"collation_database":       {"utf8mb4_general_ci", false},
	"time_zone":                {"UTC", false},
	"system_time_zone":         {"UTC", false},
	"transaction_isolation":    {"REPEATABLE-READ", false},
	"tx_isolation":             {"REPEATABLE-READ", false},
	"transaction_read_only":    {"0", true},
	"tx_read_only":             {"0", true},
	"lower_case_table_names":   {"0", true},
	"wait_timeout":             {"28800", true},
	"interactive_timeout":      {"28800", true},
	"net_write_timeout":        {"60", true},
	"net_read_timeout":         {"30", true},
	"sql_select_limit":         {"18446744073709551615", false},
	"auto_increment_increment": {"1", true},
	"performance_schema":       {"0", true},
	"have_ssl":                 {"DISABLED", false},
	"license":                  {"Apache-2.0", false},
	"init_connect":             {"", false},
	"warning_count":            {"0", true},
	"error_count":              {"0", true},
}

// special answers the statements above; handled is false for anything
// else, which goes to the engine.
func (c *conn) special(ctx context.Context, sql string, binaryRows, more bool) (handled bool, err error) {
	switch {
	case reShowDatabases.MatchString(sql):
		m := reShowDatabases.FindStringSubmatch(sql)
		q := `SELECT schema_name::text AS "Database" FROM information_schema.schemata`
		if m[1] != "" {
			q += ` WHERE schema_name LIKE ` + m[1]
		}
		return true, c.runInternal(ctx, q+` ORDER BY 1`, binaryRows, more)
	case reShowTables.MatchString(sql):
		m := reShowTables.FindStringSubmatch(sql)
		db := c.schema
		if m[2] != "" {
			db = unquoteIdent(m[2])
			if err := c.checkSchema(ctx, db); err != nil {
				return true, err
			}
		}
		cols := quoteIdent("Tables_in_" + db)
		if m[1] != "" {
			cols += `, table_type AS "Table_type"`
		}
		q := `SELECT table_name AS ` + cols + ` FROM (
			SELECT table_name::text, table_type FROM information_schema.tables WHERE table_schema = ` + quoteLiteral(db) + `
			UNION ALL SELECT matviewname::text, 'VIEW' FROM pg_catalog.pg_matviews WHERE schemaname = ` + quoteLiteral(db) + `) t`
		if m[3] != "" {
			q += ` WHERE table_name LIKE ` + m[3]
		}
		return true, c.runInternal(ctx, q+` ORDER BY 1`, binaryRows, more)
	case reShowColumns.MatchString(sql):
		m := reShowColumns.FindStringSubmatch(sql)
		return true, c.describe(ctx, m[1], m[2], m[3], binaryRows, more)
	case reDescribe.MatchString(sql):
		return true, c.describe(ctx, reDescribe.FindStringSubmatch(sql)[1], "", "", binaryRows, more)
	case reShowCreate.MatchString(sql):
		m := reShowCreate.FindStringSubmatch(sql)
		return true, c.showCreate(ctx, strings.ToUpper(m[1]), m[2], binaryRows, more)
	case reShowVariables.MatchString(sql):
		m := reShowVariables.FindStringSubmatch(sql)
		return true, c.showVariables(ctx, m[1], m[2], binaryRows, more)
	case reShowEmpty.MatchString(sql):
		cols := []pgwire.Column{{Name: "Level", Type: types.Text}, {Name: "Code", Type: types.Int32}, {Name: "Message", Type: types.Text}}
		if strings.Contains(strings.ToUpper(sql), "STATUS") {
			cols = []pgwire.Column{{Name: "Variable_name", Type: types.Text}, {Name: "Value", Type: types.Text}}
		}
		return true, c.writeRows(ctx, cols, &staticRows{}, binaryRows, more)
	case reUse.MatchString(sql):
		if err := c.use(ctx, unquoteIdent(reUse.FindStringSubmatch(sql)[1])); err != nil {
			return true, err
		}
		return true, c.writeOK(0, more)
	case reSetNames.MatchString(sql):
		return true, c.writeOK(0, more) // the connection always speaks utf8mb4
	case reSet.MatchString(sql):
		return c.set(reSet.FindStringSubmatch(sql)[1], more)
	case reSelectSys.MatchString(sql):
		return c.selectSys(ctx, reSelectSys.FindStringSubmatch(sql)[1], binaryRows, more)
	}
	return false, nil
}

// runInternal runs a query of this package's and sends its result.
func (c *conn) runInternal(ctx context.Context, sql string, binaryRows, more bool) error {
	stmts, err := c.sess.Parse(ctx, sql, nil)
	if err != nil {
		return err
	}
	defer closeAll(stmts)
	if len(stmts) != 1 {
		return sqlerr.Errorf(sqlerr.InternalError, "internal query has %d statements", len(stmts))
	}
	res, err := stmts[0].Execute(ctx, nil)
	if err != nil {
		return err
	}
	return c.writeResult(ctx, res, binaryRows, more)
}

// queryInternal runs a query of this package's and returns its rows.
func (c *conn) queryInternal(ctx context.Context, sql string) ([]types.Row, error) {
	stmts, err := c.sess.Parse(ctx, sql, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(stmts)
	var out []types.Row
	for _, st := range stmts {
		res, err := st.Execute(ctx, nil)
		if err != nil {
			return nil, err
		}
		if res.Copy != nil && res.Copy.Sink != nil {
			res.Copy.Sink.Abort()
		}
		if res.Rows == nil {
			continue
		}
		for {
			row, err := res.Rows.Next(ctx)
			if err != nil || row == nil {
				res.Rows.Close()
				if err != nil {
					return nil, err
				}
				break
			}
			out = append(out, append(types.Row(nil), row...))
		}
	}
	return out, nil
}

func closeAll(stmts []pgwire.Statement) {
	for _, st := range stmts {
		st.Close()
	}
}

// checkSchema fails with ER_BAD_DB_ERROR for a schema that does not exist.
func (c *conn) checkSchema(ctx context.Context, db string) error {
	rows, err := c.queryInternal(ctx, `SELECT 1 FROM information_schema.schemata WHERE schema_name = `+quoteLiteral(db))
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return newError(erBadDB, "42000", fmt.Sprintf("Unknown database '%s'", db))
	}
	return nil
}

// use makes db the current database: the session's search_path.
func (c *conn) use(ctx context.Context, db string) error {
	if strings.IndexByte(db, 0) >= 0 {
		return newError(erBadDB, "42000", "Unknown database")
	}
	if err := c.checkSchema(ctx, db); err != nil {
		return err
	}
	if _, err := c.queryInternal(ctx, `SET search_path TO `+quoteIdent(db)); err != nil {
		return err
	}
	c.schema = db
	return nil
}

// splitQualified splits "db"."t" or t into schema (default c.schema) and
// name.
func (c *conn) splitQualified(q, db string) (string, string) {
	parts := regexp.MustCompile(`^(` + reIdent + `)\s*\.\s*(` + reIdent + `)$`).FindStringSubmatch(strings.TrimSpace(q))
	if parts != nil {
		return unquoteIdent(parts[1]), unquoteIdent(parts[2])
	}
	if db != "" {
		return unquoteIdent(db), unquoteIdent(q)
	}
	return c.schema, unquoteIdent(q)
}

func (c *conn) describe(ctx context.Context, table, db, like string, binaryRows, more bool) error {
	schema, name := c.splitQualified(table, db)
	q := `SELECT column_name::text AS "Field", data_type AS "Type", is_nullable AS "Null", '' AS "Key",
		column_default AS "Default", '' AS "Extra" FROM information_schema.columns
		WHERE table_schema = ` + quoteLiteral(schema) + ` AND table_name = ` + quoteLiteral(name)
	exists, err := c.queryInternal(ctx, q)
	if err != nil {
		return err
	}
	if len(exists) == 0 {
		return newError(1146, "42S02", fmt.Sprintf("Table '%s.%s' doesn't exist", schema, name))
	}
	if like != "" {
		q += ` AND column_name LIKE ` + like
	}
	return c.runInternal(ctx, q+` ORDER BY ordinal_position`, binaryRows, more)
}

// showCreate answers with the engine's SHOW CREATE (the statement, in
// Runnel's SQL, that creates the relation) under MySQL's column names.
func (c *conn) showCreate(ctx context.Context, kind, table string, binaryRows, more bool) error {
	schema, name := c.splitQualified(table, "")
	rows, err := c.queryInternal(ctx, `SHOW CREATE `+kind+` `+quoteIdent(schema)+`.`+quoteIdent(name))
	if err != nil {
		return err
	}
	if len(rows) == 0 || len(rows[0]) < 2 {
		return newError(1146, "42S02", fmt.Sprintf("Table '%s.%s' doesn't exist", schema, name))
	}
	label := "Table"
	if kind == "VIEW" {
		label = "View"
	}
	cols := []pgwire.Column{{Name: label, Type: types.Text}, {Name: "Create " + label, Type: types.Text}}
	return c.writeRows(ctx, cols, &staticRows{rows: []types.Row{{types.DVarchar(name), rows[0][1]}}}, binaryRows, more)
}

func (c *conn) sysValue(name string) (sysVar, bool) {
	v, ok := systemVars[name]
	if s, set := c.vars[name]; set {
		v.value = s
		ok = true
	}
	return v, ok
}

func (c *conn) showVariables(ctx context.Context, like, eq string, binaryRows, more bool) error {
	names := make([]string, 0, len(systemVars))
	for n := range systemVars {
		names = append(names, n)
	}
	sort.Strings(names)
	var match func(string) bool
	switch {
	case like != "":
		re := likeRegexp(unquoteLiteral(like))
		match = re.MatchString
	case eq != "":
		want := strings.ToLower(unquoteLiteral(eq))
		match = func(n string) bool { return n == want }
	default:
		match = func(string) bool { return true }
	}
	var rows []types.Row
	for _, n := range names {
		if match(n) {
			v, _ := c.sysValue(n)
			rows = append(rows, types.Row{types.DVarchar(n), types.DVarchar(v.value)})
		}
	}
	cols := []pgwire.Column{{Name: "Variable_name", Type: types.Text}, {Name: "Value", Type: types.Text}}
	return c.writeRows(ctx, cols, &staticRows{rows: rows}, binaryRows, more)
}

// likeRegexp compiles a LIKE pattern (case-insensitive, as MySQL compares
// variable names).
func likeRegexp(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?is)^`)
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		case c == '%':
			b.WriteString(`.*`)
		case c == '_':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

// set handles SET of MySQL variables. A SET naming anything else (a
// PostgreSQL setting: SET TimeZone = 'UTC') goes to the engine.
func (c *conn) set(list string, more bool) (bool, error) {
	items := splitTopLevel(list)
	type assign struct{ name, value string }
	var as []assign
	for _, it := range items {
		m := reAssign.FindStringSubmatch(strings.TrimSpace(it))
		if m == nil {
			return false, nil
		}
		name := strings.ToLower(m[2])
		if m[1] == "@" {
			return true, newError(erNotSupportedYet, "42000", "user variables (@"+m[2]+") are not supported")
		}
		if _, known := systemVars[name]; !known {
			if strings.HasPrefix(m[1], "@@") {
				return true, newError(erUnknownSystemVar, "HY000", fmt.Sprintf("Unknown system variable '%s'", m[2]))
			}
			return false, nil
		}
		v := strings.TrimSpace(m[3])
		if strings.HasPrefix(v, "'") {
			v = unquoteLiteral(v)
		}
		as = append(as, assign{name, v})
	}
	for _, a := range as {
		if a.name == "autocommit" {
			switch strings.ToUpper(a.value) {
			case "1", "ON", "TRUE":
			default:
				return true, newError(erNotSupportedYet, "42000", "autocommit = 0 is not supported: use START TRANSACTION ... COMMIT")
			}
			continue
		}
		c.vars[a.name] = a.value
	}
	return true, c.writeOK(0, more)
}

// splitTopLevel splits on commas outside quotes and parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '(':
			depth++
		case ch == ')':
			depth--
		case ch == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// selectSys answers a SELECT whose every item is a system variable or one
// of MySQL's session functions.
func (c *conn) selectSys(ctx context.Context, list string, binaryRows, more bool) (bool, error) {
	items := splitTopLevel(list)
	var cols []pgwire.Column
	var row types.Row
	for _, it := range items {
		it = strings.TrimSpace(it)
		m := reSysItem.FindStringSubmatch(it)
		if m == nil {
			return false, nil
		}
		name := m[1]
		if m[2] != "" {
			if strings.HasPrefix(m[2], "'") {
				name = unquoteLiteral(m[2])
			} else {
				name = unquoteIdent(m[2])
			}
		}
		expr := strings.ToUpper(strings.Join(strings.Fields(m[1]), ""))
		var d types.Datum
		t := types.Text
		switch {
		case strings.HasPrefix(expr, "@@"):
			v := strings.ToLower(expr[2:])
			if i := strings.IndexByte(v, '.'); i >= 0 {
				v = v[i+1:]
			}
			sv, ok := c.sysValue(v)
			if !ok {
				return true, newError(erUnknownSystemVar, "HY000", fmt.Sprintf("Unknown system variable '%s'", v))
			}
			d = types.DVarchar(sv.value)
			if sv.num {
				if n, err := strconv.ParseInt(sv.value, 10, 64); err == nil {
					d, t = types.DInt64(n), types.Int64
				}
			}
		case expr == "DATABASE()" || expr == "SCHEMA()":
			d = types.DVarchar(c.schema)
		case expr == "USER()" || expr == "SESSION_USER()" || expr == "SYSTEM_USER()":
			host := "localhost"
			if a := c.nc.RemoteAddr(); a != nil && !isLoopback(a) {
				host = a.String()
				if i := strings.LastIndexByte(host, ':'); i >= 0 {
					host = host[:i]
				}
			}
			d = types.DVarchar(c.user + "@" + host)
		case expr == "CURRENT_USER()":
			d = types.DVarchar(c.user + "@%")
		case expr == "VERSION()":
			d = types.DVarchar(ServerVersion)
		case expr == "CONNECTION_ID()":
			d, t = types.DInt64(int64(c.id)), types.Int64
		case expr == "LAST_INSERT_ID()":
			d, t = types.DInt64(0), types.Int64
		default:
			return false, nil
		}
		cols = append(cols, pgwire.Column{Name: name, Type: t})
		row = append(row, d)
	}
	return true, c.writeRows(ctx, cols, &staticRows{rows: []types.Row{row}}, binaryRows, more)
}

func unquoteIdent(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return strings.ToLower(s)
}

func unquoteLiteral(s string) string {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], `''`, `'`)
	}
	return s
}
