package parser

import (
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/sqlerr"
)

func TestSplitAndParse(t *testing.T) {
	sts, err := Parse("select 1; select ';' as x ;; -- c\n insert into t values (1);")
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 3 {
		t.Fatalf("got %d statements; want 3", len(sts))
	}
	if sts[1].Text != "select ';' as x" {
		t.Fatalf("got %q", sts[1].Text)
	}
	if sts[1].AST.GetSelectStmt() == nil || sts[2].AST.GetInsertStmt() == nil {
		t.Fatalf("wrong AST kinds")
	}
}

func TestSyntaxErrorPosition(t *testing.T) {
	// "form" is an alias, so PostgreSQL fails at "t": position 25 counted
	// from the start of the whole string.
	_, err := Parse("select 1; select 1 form t")
	e := sqlerr.From(err)
	if e == nil || e.Code != sqlerr.SyntaxError {
		t.Fatalf("got %v; want 42601", err)
	}
	if e.Position != 25 {
		t.Fatalf("position %d; want 25", e.Position)
	}
	if e.Message != `syntax error at or near "t"` {
		t.Fatalf("message %q", e.Message)
	}
	// Characters, not bytes.
	_, err = Parse("select 'é', from")
	if e := sqlerr.From(err); e == nil || e.Position != 13 {
		t.Fatalf("got %+v; want position 13", err)
	}
}

func TestRunnelStatements(t *testing.T) {
	cases := []struct {
		in   string
		want string
	}{
		{"FLUSH", "*parser.Flush"},
		{"  flush ;", "*parser.Flush"},
		{"RECOVER", "*parser.Recover"},
		{"show tables", "*parser.ShowObjects"},
		{"SHOW TABLES FROM s1", "*parser.ShowObjects"},
		{"show materialized views", "*parser.ShowObjects"},
		{"DESCRIBE s.\"T\"", "*parser.Describe"},
		{"cancel jobs 1, 2", "*parser.CancelJobs"},
		{"SHOW COLUMNS FROM t", "*parser.ShowColumns"},
		{"show columns in s.t", "*parser.ShowColumns"},
		{"SHOW CREATE TABLE t", "*parser.ShowCreate"},
		{"SHOW CREATE MATERIALIZED VIEW s.\"Mv\"", "*parser.ShowCreate"},
		{"show create source src", "*parser.ShowCreate"},
		{"SHOW PROCESSLIST", "*parser.ShowObjects"},
		{"KILL 42", "*parser.Kill"},
		{"kill '42' ;", "*parser.Kill"},
	}
	for _, c := range cases {
		sts, err := Parse(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if len(sts) != 1 || sts[0].Runnel == nil {
			t.Fatalf("%s: not a Runnel statement", c.in)
		}
		if got := typeName(sts[0].Runnel); got != c.want {
			t.Fatalf("%s: got %s; want %s", c.in, got, c.want)
		}
	}
	sts, _ := Parse("SHOW TABLES FROM s1")
	if s := sts[0].Runnel.(*ShowObjects); s.Schema != "s1" || s.Kind != ShowTables {
		t.Fatalf("got %+v", s)
	}
	sts, _ = Parse("show processlist")
	if s := sts[0].Runnel.(*ShowObjects); s.Kind != ShowProcessList {
		t.Fatalf("got %+v", s)
	}
	sts, _ = Parse("KILL '7'")
	if k := sts[0].Runnel.(*Kill); k.PID != 7 {
		t.Fatalf("got %+v", k)
	}
	for _, bad := range []string{"KILL", "KILL x", "KILL 0", "kill '1:2'", "KILL 1 2", "SHOW PROCESSLIST x"} {
		if _, err := Parse(bad); sqlerr.Code(err) != sqlerr.SyntaxError {
			t.Fatalf("%s: got %v, want 42601", bad, err)
		}
	}
	if sts, err := Parse("killjoy"); err == nil && len(sts) == 1 && sts[0].Runnel != nil {
		t.Fatalf("killjoy parsed as %T", sts[0].Runnel)
	}
	sts, _ = Parse(`DESCRIBE s."T"`)
	if d := sts[0].Runnel.(*Describe); d.Schema != "s" || d.Name != "T" {
		t.Fatalf("got %+v", d)
	}
	sts, _ = Parse(`SHOW CREATE MATERIALIZED VIEW s."Mv"`)
	if c := sts[0].Runnel.(*ShowCreate); c.Kind != ShowMaterializedViews || c.Schema != "s" || c.Name != "Mv" {
		t.Fatalf("got %+v", c)
	}
	sts, _ = Parse(`SHOW CREATE INDEX s.i`)
	if c := sts[0].Runnel.(*ShowCreate); c.Kind != ShowIndex || c.Schema != "s" || c.Name != "i" {
		t.Fatalf("got %+v", c)
	}
	sts, _ = Parse(`SHOW INDEXES FROM "T"`)
	if c := sts[0].Runnel.(*ShowIndexes); c.Schema != "" || c.Name != "T" {
		t.Fatalf("got %+v", c)
	}
	for _, bad := range []string{"SHOW COLUMNS t", "SHOW COLUMNS FROM", "SHOW CREATE INDEX", "SHOW INDEXES t", "SHOW CREATE TABLE a b"} {
		if _, err := Parse(bad); sqlerr.Code(err) != sqlerr.SyntaxError {
			t.Fatalf("%s: got %v, want 42601", bad, err)
		}
	}
	sts, _ = Parse("show search_path")
	if sts[0].AST.GetVariableShowStmt() == nil {
		t.Fatalf("SHOW param should go to pg_query")
	}
	if _, err := Parse("cancel jobs x"); sqlerr.Code(err) != sqlerr.SyntaxError {
		t.Fatalf("got %v", err)
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *Flush:
		return "*parser.Flush"
	case *Recover:
		return "*parser.Recover"
	case *ShowObjects:
		return "*parser.ShowObjects"
	case *Describe:
		return "*parser.Describe"
	case *CancelJobs:
		return "*parser.CancelJobs"
	case *Kill:
		return "*parser.Kill"
	case *ShowColumns:
		return "*parser.ShowColumns"
	case *ShowCreate:
		return "*parser.ShowCreate"
	}
	return "?"
}

func TestCreateSource(t *testing.T) {
	sts, err := Parse(`CREATE SOURCE IF NOT EXISTS bid (auction BIGINT, price BIGINT, date_time TIMESTAMP,
		WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)
		WITH (connector = 'nexmark', nexmark.table.type = 'Bid') FORMAT PLAIN ENCODE JSON (schema.location = 'x')`)
	if err != nil {
		t.Fatal(err)
	}
	cs, ok := sts[0].Runnel.(*CreateSource)
	if !ok {
		t.Fatalf("got %T", sts[0].Runnel)
	}
	if !cs.IsSource || cs.Create.Relation.Relname != "bid" || !cs.Create.IfNotExists || len(cs.Create.TableElts) != 3 {
		t.Fatalf("got %+v", cs.Create)
	}
	if cs.Watermark == nil || cs.Watermark.Column != "date_time" || cs.Watermark.Expr.GetAExpr() == nil {
		t.Fatalf("watermark %+v", cs.Watermark)
	}
	if cs.Format != "PLAIN" || cs.Encode != "JSON" || cs.EncodeOptions["schema.location"] != "x" || len(cs.Create.Options) != 2 {
		t.Fatalf("got %+v", cs)
	}
	sts, err = Parse("create table t (v int, watermark for ts as ts, ts timestamp) append only with (connector = 'datagen')")
	if err != nil {
		t.Fatal(err)
	}
	cs = sts[0].Runnel.(*CreateSource)
	if cs.IsSource || !cs.AppendOnly || len(cs.Create.TableElts) != 2 || cs.Watermark.Column != "ts" {
		t.Fatalf("got %+v", cs)
	}
	// A plain CREATE TABLE stays PostgreSQL's.
	sts, _ = Parse("create table format (format int) with (connector = 'x')")
	if sts[0].AST.GetCreateStmt() == nil {
		t.Fatal("plain CREATE TABLE was taken by the Runnel front")
	}
}

func TestCreateCDCSourceAndTable(t *testing.T) {
	sts, err := Parse(`CREATE SOURCE pg WITH (connector = 'postgres-cdc', hostname = 'localhost', port = '5432',
		username = 'u', password = 'p', database.name = 'db', slot.name = 's', publication.create.enable = 'true')`)
	if err != nil {
		t.Fatal(err)
	}
	cs, ok := sts[0].Runnel.(*CreateSource)
	if !ok || !cs.IsSource || cs.Create.Relation.Relname != "pg" || len(cs.Create.TableElts) != 0 || len(cs.Create.Options) != 8 {
		t.Fatalf("got %T %+v", sts[0].Runnel, cs)
	}
	sts, err = Parse(`CREATE TABLE t (id int, v varchar, PRIMARY KEY (id)) FROM "Pg" TABLE 'public.t''s'`)
	if err != nil {
		t.Fatal(err)
	}
	cs, ok = sts[0].Runnel.(*CreateSource)
	if !ok || cs.IsSource || cs.FromSource != "Pg" || cs.FromTable != "public.t's" || len(cs.Create.TableElts) != 3 {
		t.Fatalf("got %T %+v", sts[0].Runnel, cs)
	}
	// (*): the upstream's columns (read at CREATE), then any listed.
	for _, c := range []struct {
		sql   string
		elems int
	}{
		{`CREATE TABLE t (*) FROM pg TABLE 'public.t'`, 0},
		{`CREATE TABLE t ( * , note text) FROM pg TABLE 'public.t'`, 1},
	} {
		sts, err = Parse(c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		cs, ok = sts[0].Runnel.(*CreateSource)
		if !ok || !cs.StarColumns || cs.FromSource != "pg" || len(cs.Create.TableElts) != c.elems {
			t.Fatalf("%s: got %T %+v", c.sql, sts[0].Runnel, cs)
		}
	}
	// CREATE TABLE ... AS SELECT ... FROM stays PostgreSQL's.
	sts, err = Parse("create table x as select * from y")
	if err != nil || sts[0].AST.GetCreateTableAsStmt() == nil {
		t.Fatalf("CREATE TABLE AS: %v", err)
	}
}

func TestDropSource(t *testing.T) {
	sts, err := Parse("drop source if exists s.pg cascade")
	if err != nil {
		t.Fatal(err)
	}
	d := sts[0].AST.GetDropStmt()
	if d == nil || d.RemoveType.String() != "OBJECT_FOREIGN_TABLE" || !d.MissingOk {
		t.Fatalf("got %v", sts[0].AST)
	}
}

func TestParseAlterRename(t *testing.T) {
	st, err := ParseOne(`ALTER SINK IF EXISTS s."K" RENAME TO k2`)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := st.Runnel.(*AlterRename)
	if !ok || !a.Sink || !a.IfExists || a.Schema != "s" || a.Name != "K" || a.NewName != "k2" {
		t.Fatalf("got %#v", st.Runnel)
	}
	if _, err := ParseOne("ALTER SOURCE src SET SCHEMA other"); err == nil || !strings.Contains(err.Error(), "RENAME TO, OWNER TO") {
		t.Fatalf("ALTER SOURCE ... SET SCHEMA: %v", err)
	}
	if st, err := ParseOne("ALTER SINK k OWNER TO bob"); err != nil || st.Runnel.(*AlterRename).Owner != "bob" {
		t.Fatalf("ALTER SINK ... OWNER TO: %v %v", st, err)
	}
	// RisingWave's SET PARALLELISM and WAIT (their own statements).
	for sql, want := range map[string]AlterParallelism{
		"ALTER SOURCE src SET PARALLELISM = 2":                     {Kind: "source", Name: "src", Value: "2"},
		"alter materialized view s.mv set parallelism to adaptive": {Kind: "materialized view", Schema: "s", Name: "mv", Value: "adaptive"},
		"ALTER SINK k SET PARALLELISM = 0":                         {Kind: "sink", Name: "k", Value: "0"},
	} {
		st, err := ParseOne(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if got, ok := st.Runnel.(*AlterParallelism); !ok || *got != want {
			t.Fatalf("%s: got %#v", sql, st.Runnel)
		}
	}
	if st, err := ParseOne("WAIT"); err != nil || st.Runnel == nil {
		t.Fatalf("WAIT: %v %v", st, err)
	}
	if st, err := ParseOne("ALTER TABLE t RENAME TO u"); err != nil || st.AST == nil {
		t.Fatalf("ALTER TABLE goes to pg_query: %v %v", st, err)
	}
}
