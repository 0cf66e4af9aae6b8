package frontend

// System catalogs: virtual pg_catalog and information_schema relations
// generated from the Runnel catalog at scan time, so that psql's
// meta-commands (\d, \dt, \l, \dn, ...) and drivers' introspection work.
//
// Object ids (pg "oid" columns, typed int4 here since Runnel has no oid
// type): pg_catalog is 11, public 2200, information_schema 13000, types
// use PostgreSQL's type oids, system tables 1_000_000+their index, the
// bootstrap superuser 10; user objects (databases, schemas, relations,
// users) are 16384 + catalog id. A table's primary-key index is
// pkIndexBase + table oid and its constraint pkConstraintBase + table oid.
//
// Relation kinds in pg_class: tables 'r', views 'v', materialized views
// 'm', sources 'r' (they behave as append-only tables for \d; psql's
// foreign-table paths need array support Runnel lacks).
//
// Arrays are not supported: array-typed columns (relacl, reloptions,
// datacl, ...) are NULL of type text.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/sql/ident"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

const (
	oidPgCatalog         = 11
	oidPublic            = 2200
	oidInformationSchema = 13000
	oidRwCatalog         = 13100
	oidBootstrapUser     = 10
	oidUserBase          = 16384
	oidSysTableBase      = 1_000_000
	pkIndexBase          = 0x40000000
	pkConstraintBase     = 0x50000000
	sysTableOption       = "runnel.system_table"
)

func userOID(id catalog.ObjectID) int64 { return oidUserBase + int64(id) }

// sysCol is one column of a system table: name and a short type name
// ("oid", "name", "text", "char", "int2", "int4", "int8", "bool",
// "float4", "arr" — an array, always NULL text).
type sysCol struct{ name, typ string }

func (c sysCol) sqlType() types.Type {
	switch c.typ {
	case "oid", "int4":
		return types.Int32
	case "int2":
		return types.Int16
	case "int8":
		return types.Int64
	case "bool":
		return types.Bool
	case "float4":
		return types.Float32
	case "float8":
		return types.Float64
	case "timestamptz":
		return types.Timestamptz
	case "interval":
		return types.Interval
	case "oidvector":
		return types.OIDVector
	case "int2vector":
		return types.Int2Vector
	}
	return types.Text
}

// sysTable is one virtual relation.
type sysTable struct {
	schema string
	name   string
	cols   []sysCol
	// rows produces the rows as Go values in column order: string, int,
	// int64, bool, float64 or nil (NULL).
	rows func(sc *sysCtx) [][]any
}

// sysCtx is what row generators read: the session's database and user
// and a consistent copy of the catalog's objects.
type sysCtx struct {
	ss   *session
	cat  CatalogReader
	db   *catalog.Database
	rels []*catalog.Relation // the database's visible relations, by id
	// indexes are the database's indexes (CREATE INDEX), by id: they
	// are in pg_class and pg_index, not in the relations' other listings.
	indexes []*catalog.Relation
	// err is a failure of a rows function that reads outside memory
	// (rw_worker_nodes reads the metadata store); scanSystem returns it.
	err error
}

func newSysCtx(ss *session) *sysCtx {
	cat := ss.s.catalog
	dbID := ss.db.ID
	// Sinks are not relations to pg_catalog (rw_catalog.rw_sinks lists them).
	var rels, indexes []*catalog.Relation
	for _, r := range cat.Relations(func(r *catalog.Relation) bool {
		return r.DatabaseID == dbID && !r.Creating && r.Kind != catalog.KindSink
	}) {
		if r.Kind == catalog.KindIndex {
			indexes = append(indexes, r)
		} else {
			rels = append(rels, r)
		}
	}
	sort.Slice(rels, func(i, j int) bool { return rels[i].ID < rels[j].ID })
	return &sysCtx{ss: ss, cat: cat, db: ss.db, rels: rels, indexes: indexes}
}

func (sc *sysCtx) schemaOID(s *catalog.Schema) int64 {
	switch s.Name {
	case "public":
		return oidPublic
	case "pg_catalog":
		return oidPgCatalog
	case "information_schema":
		return oidInformationSchema
	}
	return userOID(s.ID)
}

// schemaOIDByID maps a relation's schema id to its oid.
func (sc *sysCtx) schemaOIDByID(id catalog.ObjectID) int64 {
	for _, s := range sc.cat.Schemas(sc.db.ID) {
		if s.ID == id {
			return sc.schemaOID(s)
		}
	}
	return userOID(id)
}

func (sc *sysCtx) schemaName(id catalog.ObjectID) string {
	for _, s := range sc.cat.Schemas(sc.db.ID) {
		if s.ID == id {
			return s.Name
		}
	}
	return ""
}

func (sc *sysCtx) ownerOID(name string) int64 {
	if u, err := sc.cat.UserByName(name); err == nil {
		return userOID(u.ID)
	}
	return oidBootstrapUser
}

func relkind(r *catalog.Relation) string {
	switch r.Kind {
	case catalog.KindView:
		return "v"
	case catalog.KindMaterializedView:
		return "m"
	case catalog.KindIndex:
		return "i"
	}
	return "r"
}

// hasPKIndex reports whether a relation shows a primary-key index: a table
// declared with a primary key (not the hidden _row_id).
func hasPKIndex(r *catalog.Relation) bool {
	if r.Kind != catalog.KindTable || len(r.PK) == 0 {
		return false
	}
	for _, i := range r.PK {
		if i >= len(r.Columns) || r.Columns[i].Hidden {
			return false
		}
	}
	return true
}

func pkName(r *catalog.Relation) string { return r.Name + "_pkey" }

func pkColumnList(r *catalog.Relation) string {
	names := make([]string, len(r.PK))
	for i, c := range r.PK {
		names[i] = pgQuoteIdent(r.Columns[c].Name)
	}
	return strings.Join(names, ", ")
}

func pkAttnums(r *catalog.Relation) string {
	nums := make([]string, len(r.PK))
	for i, c := range r.PK {
		nums[i] = strconv.Itoa(c + 1)
	}
	return strings.Join(nums, " ")
}

// pgQuoteIdent quotes an identifier when PostgreSQL would.
func pgQuoteIdent(s string) string { return ident.Quote(s) }

// sysType is a row of pg_type.
type sysType struct {
	oid      int
	name     string
	len      int
	byval    bool
	category string
	input    string
	// typtype is 'b' (base) when empty; pseudo-types are 'p'.
	typtype string
	// elem is the element type of a vector type.
	elem int
}

var sysTypes = []sysType{
	{16, "bool", 1, true, "B", "boolin", "", 0},
	{17, "bytea", -1, false, "U", "byteain", "", 0},
	{18, "char", 1, true, "Z", "charin", "", 0},
	{19, "name", 64, false, "S", "namein", "", 18},
	{20, "int8", 8, true, "N", "int8in", "", 0},
	{21, "int2", 2, true, "N", "int2in", "", 0},
	{23, "int4", 4, true, "N", "int4in", "", 0},
	{25, "text", -1, false, "S", "textin", "", 0},
	{26, "oid", 4, true, "N", "oidin", "", 0},
	{700, "float4", 4, true, "N", "float4in", "", 0},
	{701, "float8", 8, true, "N", "float8in", "", 0},
	{1043, "varchar", -1, false, "S", "varcharin", "", 0},
	{1082, "date", 4, true, "D", "date_in", "", 0},
	{1083, "time", 8, true, "D", "time_in", "", 0},
	{1114, "timestamp", 8, true, "D", "timestamp_in", "", 0},
	{1184, "timestamptz", 8, true, "D", "timestamptz_in", "", 0},
	{1186, "interval", 16, false, "T", "interval_in", "", 0},
	{1700, "numeric", -1, false, "N", "numeric_in", "", 0},
	{2950, "uuid", 16, false, "U", "uuid_in", "", 0},
	{3802, "jsonb", -1, false, "U", "jsonb_in", "", 0},
	// The types of pg_proc's signatures that are not types of values.
	{30, "oidvector", -1, false, "A", "oidvectorin", "", 26},
	{22, "int2vector", -1, false, "A", "int2vectorin", "", 21},
	{2276, "any", 4, true, "P", "any_in", "p", 0},
	{2278, "void", 4, true, "P", "void_in", "p", 0},
	{2283, "anyelement", 4, true, "P", "anyelement_in", "p", 0},
	{5077, "anycompatible", 4, true, "P", "anycompatible_in", "p", 0},
	{2776, "anynonarray", 4, true, "P", "anynonarray_in", "p", 0},
	{5078, "anycompatiblearray", -1, false, "P", "anycompatiblearray_in", "p", 0},
	// The array types (types/array.go), named _elem as in PostgreSQL.
	{1000, "_bool", -1, false, "A", "array_in", "", 16},
	{1001, "_bytea", -1, false, "A", "array_in", "", 17},
	{1005, "_int2", -1, false, "A", "array_in", "", 21},
	{1007, "_int4", -1, false, "A", "array_in", "", 23},
	{1009, "_text", -1, false, "A", "array_in", "", 25},
	{1015, "_varchar", -1, false, "A", "array_in", "", 1043},
	{1016, "_int8", -1, false, "A", "array_in", "", 20},
	{1021, "_float4", -1, false, "A", "array_in", "", 700},
	{1022, "_float8", -1, false, "A", "array_in", "", 701},
	{1115, "_timestamp", -1, false, "A", "array_in", "", 1114},
	{1182, "_date", -1, false, "A", "array_in", "", 1082},
	{1183, "_time", -1, false, "A", "array_in", "", 1083},
	{1185, "_timestamptz", -1, false, "A", "array_in", "", 1184},
	{1187, "_interval", -1, false, "A", "array_in", "", 1186},
	{1231, "_numeric", -1, false, "A", "array_in", "", 1700},
	{2951, "_uuid", -1, false, "A", "array_in", "", 2950},
	{3807, "_jsonb", -1, false, "A", "array_in", "", 3802},
	// No signature uses these; clients that read pg_type expect them
	// (sqlsmith asserts that both exist).
	{2277, "anyarray", -1, false, "P", "anyarray_in", "p", 0},
	{2281, "internal", 8, true, "P", "internal_in", "p", 0},
}

func typeLen(oid uint32) int {
	for _, t := range sysTypes {
		if uint32(t.oid) == oid {
			return t.len
		}
	}
	return -1
}

// formatType renders a type oid and PostgreSQL typmod as format_type does.
func formatType(oid uint32, mod int32, hasMod bool) string {
	switch oid {
	case types.OIDOid:
		return "oid"
	case 19:
		return "name"
	case 18:
		return `"char"`
	case types.OIDOIDVector:
		return "oidvector"
	case types.OIDInt2Vector:
		return "int2vector"
	case 2276:
		return `"any"`
	case 2283:
		return "anyelement"
	case 5077:
		return "anycompatible"
	case types.OIDVoid:
		return "void"
	case 2277:
		return "anyarray"
	case 2281:
		return "internal"
	}
	t, ok := types.FromOID(oid)
	if !ok {
		return "???"
	}
	if hasMod {
		t = t.WithPGTypmod(mod)
	}
	return t.Name()
}

// columnsOf lists a relation's columns as pg_attribute shows them: the
// visible ones, numbered by position (hidden columns leave a gap).
type attr struct {
	num int
	col catalog.Column
}

func columnsOf(r *catalog.Relation) []attr {
	var out []attr
	for i, c := range r.Columns {
		if !c.Hidden {
			out = append(out, attr{i + 1, c})
		}
	}
	return out
}

// sysRelations returns the system tables as catalog relations (for
// pg_class / pg_attribute rows of the catalogs themselves).
func sysRelation(i int, t *sysTable) *catalog.Relation {
	rel := &catalog.Relation{
		ID:      catalog.ObjectID(oidSysTableBase + i),
		Name:    t.name,
		Kind:    catalog.KindSystem,
		Owner:   "",
		Options: map[string]string{sysTableOption: t.schema + "." + t.name},
	}
	for _, c := range t.cols {
		rel.Columns = append(rel.Columns, catalog.Column{Name: c.name, Type: c.sqlType()})
	}
	return rel
}

var (
	sysTables     []*sysTable
	sysTableIndex map[string]int // "schema.name" → index in sysTables
)

func init() {
	sysTables = append(buildSysTables(), rwSysTables()...)
	sysTableIndex = make(map[string]int, len(sysTables))
	for i, t := range sysTables {
		sysTableIndex[t.schema+"."+t.name] = i
	}
}

// resolveSystemRelation finds a virtual system relation: schema-qualified
// in pg_catalog or information_schema, or unqualified in pg_catalog
// (which PostgreSQL searches before search_path).
func resolveSystemRelation(schema, name string) (*catalog.Relation, bool) {
	if schema == "" {
		schema = "pg_catalog"
	}
	if schema != "pg_catalog" && schema != "information_schema" && schema != rwCatalog {
		return nil, false
	}
	i, ok := sysTableIndex[schema+"."+name]
	if !ok {
		return nil, false
	}
	return sysRelation(i, sysTables[i]), true
}

// scanSystem produces a system relation's rows for a session.
func scanSystem(ss *session, rel *catalog.Relation) (batch.RowIterator, error) {
	i, ok := sysTableIndex[rel.Options[sysTableOption]]
	if !ok || ss == nil {
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "system table %q cannot be read here", rel.Name)
	}
	t := sysTables[i]
	sc := newSysCtx(ss)
	vals := t.rows(sc)
	if sc.err != nil {
		return nil, fmt.Errorf("system table %s.%s: %w", t.schema, t.name, sc.err)
	}
	rows := make([]types.Row, 0, len(vals))
	for _, v := range vals {
		if len(v) != len(t.cols) {
			return nil, fmt.Errorf("system table %s.%s: row has %d values, want %d", t.schema, t.name, len(v), len(t.cols))
		}
		row := make(types.Row, len(v))
		for j, x := range v {
			d, err := toDatum(t.cols[j].sqlType(), x)
			if err != nil {
				return nil, fmt.Errorf("system table %s.%s column %s: %w", t.schema, t.name, t.cols[j].name, err)
			}
			row[j] = d
		}
		rows = append(rows, row)
	}
	return pgwire.SliceRows(rows), nil
}

func toDatum(t types.Type, v any) (types.Datum, error) {
	if v == nil {
		return types.Datum{}, nil
	}
	switch x := v.(type) {
	case string:
		if t.Kind == types.KindVarchar {
			return types.DVarchar(x), nil
		}
	case bool:
		if t.Kind == types.KindBool {
			return types.DBool(x), nil
		}
	case float64:
		if t.Kind == types.KindFloat32 {
			return types.DFloat32(float32(x)), nil
		}
		if t.Kind == types.KindFloat64 {
			return types.DFloat64(x), nil
		}
	case time.Time:
		if t.Kind == types.KindTimestamptz {
			return types.DTimestamptz(x.UnixMicro()), nil
		}
	case time.Duration:
		if t.Kind == types.KindInterval {
			return types.DInterval(types.IntervalValue{Micros: x.Microseconds()}), nil
		}
	case int:
		return intDatum(t, int64(x))
	case int64:
		return intDatum(t, x)
	}
	return types.Datum{}, fmt.Errorf("value %v (%T) does not fit %s", v, v, t.Name())
}

func intDatum(t types.Type, v int64) (types.Datum, error) {
	switch t.Kind {
	case types.KindInt16:
		return types.DInt16(int16(v)), nil
	case types.KindInt32:
		return types.DInt32(int32(v)), nil
	case types.KindInt64:
		return types.DInt64(v), nil
	}
	return types.Datum{}, fmt.Errorf("integer %d does not fit %s", v, t.Name())
}

func cols(spec string) []sysCol {
	var out []sysCol
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		parts := strings.Fields(f)
		out = append(out, sysCol{name: parts[0], typ: parts[1]})
	}
	return out
}

func emptyRows(*sysCtx) [][]any { return nil }
