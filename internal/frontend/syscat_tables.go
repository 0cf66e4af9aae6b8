package frontend

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/types"
)

// buildSysTables defines the virtual pg_catalog and information_schema
// relations (see syscat.go for the oid scheme).
func buildSysTables() []*sysTable {
	pg := func(name, spec string, rows func(*sysCtx) [][]any) *sysTable {
		return &sysTable{schema: "pg_catalog", name: name, cols: cols(spec), rows: rows}
	}
	is := func(name, spec string, rows func(*sysCtx) [][]any) *sysTable {
		return &sysTable{schema: "information_schema", name: name, cols: cols(spec), rows: rows}
	}
	return []*sysTable{
		pg("pg_namespace", "oid oid, nspname name, nspowner oid, nspacl arr", namespaceRows),
		pg("pg_class", `oid oid, relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid,
			relam oid, relfilenode oid, reltablespace oid, relpages int4, reltuples float4, relallvisible int4,
			reltoastrelid oid, relhasindex bool, relisshared bool, relpersistence char, relkind char,
			relnatts int2, relchecks int2, relhasrules bool, relhastriggers bool, relhassubclass bool,
			relrowsecurity bool, relforcerowsecurity bool, relispopulated bool, relreplident char,
			relispartition bool, relrewrite oid, relacl arr, reloptions arr, relpartbound text`, classRows),
		pg("pg_attribute", `attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2,
			attnum int2, attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attalign char,
			attstorage char, attcompression char, attnotnull bool, atthasdef bool, atthasmissing bool,
			attidentity char, attgenerated char, attisdropped bool, attislocal bool, attinhcount int4,
			attcollation oid, attacl arr, attoptions arr, attfdwoptions arr`, attributeRows),
		pg("pg_attrdef", "oid oid, adrelid oid, adnum int2, adbin text", attrdefRows),
		pg("pg_type", `oid oid, typname name, typnamespace oid, typowner oid, typlen int2, typbyval bool,
			typtype char, typcategory char, typispreferred bool, typisdefined bool, typdelim char,
			typrelid oid, typsubscript text, typelem oid, typarray oid, typinput text, typoutput text,
			typreceive text, typsend text, typmodin text, typmodout text, typanalyze text, typalign char,
			typstorage char, typnotnull bool, typbasetype oid, typtypmod int4, typndims int4,
			typcollation oid, typdefaultbin text, typdefault text, typacl arr`, typeRows),
		pg("pg_index", `indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, indisunique bool,
			indnullsnotdistinct bool, indisprimary bool, indisexclusion bool, indimmediate bool,
			indisclustered bool, indisvalid bool, indcheckxmin bool, indisready bool, indislive bool,
			indisreplident bool, indkey int2vector, indcollation oidvector, indclass oidvector, indoption int2vector,
			indexprs text, indpred text`, indexRows),
		pg("pg_indexes", "schemaname name, tablename name, indexname name, tablespace name, indexdef text", indexesRows),
		pg("pg_constraint", `oid oid, conname name, connamespace oid, contype char, condeferrable bool,
			condeferred bool, convalidated bool, conrelid oid, contypid oid, conindid oid, conparentid oid,
			confrelid oid, confupdtype char, confdeltype char, confmatchtype char, conislocal bool,
			coninhcount int4, connoinherit bool, conkey arr, confkey arr, conpfeqop arr, conppeqop arr,
			conffeqop arr, confdelsetcols arr, conexclop arr, conbin text`, constraintRows),
		pg("pg_database", `oid oid, datname name, datdba oid, encoding int4, datlocprovider char,
			datistemplate bool, datallowconn bool, datconnlimit int4, datfrozenxid int8, datminmxid int8,
			dattablespace oid, datcollate text, datctype text, daticulocale text, datcollversion text,
			datacl arr`, databaseRows),
		pg("pg_roles", `oid oid, rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool,
			rolcreatedb bool, rolcanlogin bool, rolreplication bool, rolconnlimit int4, rolpassword text,
			rolvaliduntil text, rolbypassrls bool, rolconfig arr`, rolesRows(false)),
		pg("pg_authid", `oid oid, rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool,
			rolcreatedb bool, rolcanlogin bool, rolreplication bool, rolconnlimit int4, rolpassword text,
			rolvaliduntil text, rolbypassrls bool, rolconfig arr`, rolesRows(true)),
		pg("pg_user", `usename name, usesysid oid, usecreatedb bool, usesuper bool, userepl bool,
			usebypassrls bool, passwd text, valuntil text, useconfig arr`, userRows),
		pg("pg_auth_members", "oid oid, roleid oid, member oid, grantor oid, admin_option bool", emptyRows),
		// Runnel has no user-defined functions; the built-ins are listed
		// (syscat_procs.go).
		pg("pg_proc", `oid oid, proname name, pronamespace oid, proowner oid, prolang oid, procost float4,
			prorows float4, provariadic oid, prosupport text, prokind char, prosecdef bool, proleakproof bool,
			proisstrict bool, proretset bool, provolatile char, proparallel char, pronargs int2,
			pronargdefaults int2, prorettype oid, proargtypes oidvector, proallargtypes arr, proargmodes arr,
			proargnames arr, proargdefaults text, protrftypes arr, prosrc text, probin text,
			prosqlbody text, proconfig arr, proacl arr`, procRows),
		pg("pg_language", `oid oid, lanname name, lanowner oid, lanispl bool, lanpltrusted bool,
			lanplcallfoid oid, laninline oid, lanvalidator oid, lanacl arr`, func(*sysCtx) [][]any {
			return [][]any{
				{oidInternalLang, "internal", oidBootstrapUser, false, false, 0, 0, 2246, nil},
				{13, "c", oidBootstrapUser, false, false, 0, 0, 2247, nil},
				{14, "sql", oidBootstrapUser, false, true, 0, 0, 2248, nil},
			}
		}),
		// Runnel has no enum types and no sequences (a table without a
		// primary key gets a hidden _row_id, not a serial column).
		pg("pg_enum", "oid oid, enumtypid oid, enumsortorder float4, enumlabel name", emptyRows),
		pg("pg_sequence", `seqrelid oid, seqtypid oid, seqstart int8, seqincrement int8, seqmax int8,
			seqmin int8, seqcache int8, seqcycle bool`, emptyRows),
		pg("pg_operator", `oid oid, oprname name, oprnamespace oid, oprowner oid, oprkind char,
			oprcanmerge bool, oprcanhash bool, oprleft oid, oprright oid, oprresult oid, oprcom oid,
			oprnegate oid, oprcode oid, oprrest oid, oprjoin oid`, operatorRows),
		pg("pg_aggregate", `aggfnoid oid, aggkind char, aggnumdirectargs int2, aggtransfn text,
			aggfinalfn text, aggcombinefn text, aggserialfn text, aggdeserialfn text, aggmtransfn text,
			aggminvtransfn text, aggmfinalfn text, aggfinalextra bool, aggmfinalextra bool,
			aggfinalmodify char, aggmfinalmodify char, aggsortop oid, aggtranstype oid, aggtransspace int4,
			aggmtranstype oid, aggmtransspace int4, agginitval text, aggminitval text`, aggregateRows),
		pg("pg_am", "oid oid, amname name, amhandler text, amtype char", func(*sysCtx) [][]any {
			return [][]any{{2, "heap", "heap_tableam_handler", "t"}, {403, "btree", "bthandler", "i"}}
		}),
		pg("pg_description", "objoid oid, classoid oid, objsubid int4, description text", descriptionRows),
		pg("pg_shdescription", "objoid oid, classoid oid, description text", emptyRows),
		pg("pg_inherits", "inhrelid oid, inhparent oid, inhseqno int4, inhdetachpending bool", emptyRows),
		pg("pg_policy", `oid oid, polname name, polrelid oid, polcmd char, polpermissive bool, polroles arr,
			polqual text, polwithcheck text`, emptyRows),
		pg("pg_trigger", `oid oid, tgrelid oid, tgparentid oid, tgname name, tgfoid oid, tgtype int2,
			tgenabled char, tgisinternal bool, tgconstrrelid oid, tgconstrindid oid, tgconstraint oid,
			tgdeferrable bool, tginitdeferred bool, tgnargs int2, tgattr text, tgargs text, tgqual text,
			tgoldtable name, tgnewtable name`, emptyRows),
		pg("pg_rewrite", `oid oid, rulename name, ev_class oid, ev_type char, ev_enabled char,
			is_instead bool, ev_qual text, ev_action text`, emptyRows),
		pg("pg_statistic_ext", `oid oid, stxrelid oid, stxname name, stxnamespace oid, stxowner oid,
			stxstattarget int4, stxkeys text, stxkind arr, stxexprs text`, emptyRows),
		pg("pg_publication", `oid oid, pubname name, pubowner oid, puballtables bool, pubinsert bool,
			pubupdate bool, pubdelete bool, pubtruncate bool, pubviaroot bool`, emptyRows),
		pg("pg_publication_rel", "oid oid, prpubid oid, prrelid oid, prqual text, prattrs text", emptyRows),
		pg("pg_publication_namespace", "oid oid, pnpubid oid, pnnspid oid", emptyRows),
		pg("pg_foreign_table", "ftrelid oid, ftserver oid, ftoptions arr", emptyRows),
		pg("pg_foreign_server", "oid oid, srvname name, srvowner oid, srvfdw oid, srvtype text, srvversion text, srvacl arr, srvoptions arr", emptyRows),
		pg("pg_collation", `oid oid, collname name, collnamespace oid, collowner oid, collprovider char,
			collisdeterministic bool, collencoding int4, collcollate text, collctype text,
			colliculocale text, collversion text`, emptyRows),
		pg("pg_partitioned_table", `partrelid oid, partstrat char, partnatts int2, partdefid oid,
			partattrs text, partclass arr, partcollation arr, partexprs text`, emptyRows),
		pg("pg_extension", "oid oid, extname name, extowner oid, extnamespace oid, extrelocatable bool, extversion text, extconfig arr, extcondition arr", emptyRows),
		pg("pg_tablespace", "oid oid, spcname name, spcowner oid, spcacl arr, spcoptions arr", func(*sysCtx) [][]any {
			return [][]any{{1663, "pg_default", oidBootstrapUser, nil, nil}}
		}),
		pg("pg_settings", `name text, setting text, unit text, category text, short_desc text,
			extra_desc text, context text, vartype text, source text, min_val text, max_val text,
			enumvals arr, boot_val text, reset_val text, sourcefile text, sourceline int4,
			pending_restart bool`, settingsRows),
		// client_addr is text (Runnel has no inet), backend_xid and
		// backend_xmin text (no xid); both xids are NULL (activity.go).
		pg("pg_stat_activity", `datid oid, datname name, pid int4, leader_pid int4, usesysid oid, usename name,
			application_name text, client_addr text, client_hostname text, client_port int4,
			backend_start timestamptz, xact_start timestamptz, query_start timestamptz, state_change timestamptz,
			wait_event_type text, wait_event text, state text, backend_xid text, backend_xmin text,
			query_id int8, query text, backend_type text`, activityRows),
		pg("pg_tables", `schemaname name, tablename name, tableowner name, tablespace name,
			hasindexes bool, hasrules bool, hastriggers bool, rowsecurity bool`, tablesRows),
		pg("pg_views", "schemaname name, viewname name, viewowner name, definition text", viewsRows(catalog.KindView)),
		pg("pg_matviews", `schemaname name, matviewname name, matviewowner name, tablespace name,
			hasindexes bool, ispopulated bool, definition text`, matviewsRows),
		is("tables", `table_catalog name, table_schema name, table_name name, table_type text,
			self_referencing_column_name name, reference_generation text, user_defined_type_catalog name,
			user_defined_type_schema name, user_defined_type_name name, is_insertable_into text,
			is_typed text, commit_action text`, isTablesRows),
		is("columns", `table_catalog name, table_schema name, table_name name, column_name name,
			ordinal_position int4, column_default text, is_nullable text, data_type text,
			character_maximum_length int4, character_octet_length int4, numeric_precision int4,
			numeric_precision_radix int4, numeric_scale int4, datetime_precision int4,
			udt_catalog name, udt_schema name, udt_name name, is_identity text, is_generated text,
			is_updatable text`, isColumnsRows),
		is("schemata", `catalog_name name, schema_name name, schema_owner name,
			default_character_set_catalog name, default_character_set_schema name,
			default_character_set_name name, sql_path text`, isSchemataRows),
	}
}

// allSchemas lists the database's schemas plus pg_catalog and
// information_schema as (oid, name, owner oid).
func (sc *sysCtx) allSchemas() [][]any {
	out := [][]any{
		{oidPgCatalog, "pg_catalog", oidBootstrapUser, nil},
		{oidInformationSchema, "information_schema", oidBootstrapUser, nil},
		{oidRwCatalog, rwCatalog, oidBootstrapUser, nil},
	}
	for _, s := range sc.cat.Schemas(sc.db.ID) {
		out = append(out, []any{sc.schemaOID(s), s.Name, sc.ownerOID(s.Owner), nil})
	}
	return out
}

func namespaceRows(sc *sysCtx) [][]any { return sc.allSchemas() }

func classRows(sc *sysCtx) [][]any {
	var out [][]any
	row := func(oid int64, name string, ns int64, owner int64, am int, hasIndex bool, kind string, natts int) []any {
		return []any{oid, name, ns, 0, 0, owner, am, 0, 0, 0, float64(-1), 0, 0, hasIndex, false, "p", kind,
			natts, 0, false, false, false, false, false, true, "d", false, 0, nil, nil, nil}
	}
	for _, r := range sc.rels {
		oid := userOID(r.ID)
		am := 2
		if r.Kind == catalog.KindView {
			am = 0
		}
		out = append(out, row(oid, r.Name, sc.schemaOIDByID(r.SchemaID), sc.ownerOID(r.Owner), am,
			hasPKIndex(r) || sc.hasIndexes(r.ID), relkind(r), len(columnsOf(r))))
		if hasPKIndex(r) {
			out = append(out, row(pkIndexBase+oid, pkName(r), sc.schemaOIDByID(r.SchemaID), sc.ownerOID(r.Owner),
				403, false, "i", len(r.PK)))
		}
	}
	for _, x := range sc.indexes {
		out = append(out, row(userOID(x.ID), x.Name, sc.schemaOIDByID(x.SchemaID), sc.ownerOID(x.Owner), 403, false, "i",
			len(indexAttrs(sc, x))))
	}
	for i, t := range sysTables {
		ns := int64(oidPgCatalog)
		if t.schema == "information_schema" {
			ns = oidInformationSchema
		}
		if t.schema == rwCatalog {
			ns = oidRwCatalog
		}
		out = append(out, row(int64(oidSysTableBase+i), t.name, ns, oidBootstrapUser, 2, false, "r", len(t.cols)))
	}
	return out
}

func attributeRows(sc *sysCtx) [][]any {
	var out [][]any
	add := func(relOID int64, a attr, hasDef bool) {
		t := a.col.Type
		storage := "p"
		if typeLen(t.OID()) < 0 {
			storage = "x"
		}
		if t.Kind == types.KindNumeric {
			storage = "m" // numeric's typstorage is MAIN in PostgreSQL (\d+ shows it)
		}
		out = append(out, []any{relOID, a.col.Name, int64(t.OID()), -1, typeLen(t.OID()), a.num, 0, -1,
			int64(t.PGTypmod()), typeLen(t.OID()) > 0, "i", storage, "", a.col.NotNull, hasDef, false, "", "",
			false, true, 0, 0, nil, nil, nil})
	}
	for _, r := range sc.rels {
		oid := userOID(r.ID)
		for _, a := range columnsOf(r) {
			add(oid, a, a.col.Default != "")
		}
		if hasPKIndex(r) {
			for i, c := range r.PK {
				add(pkIndexBase+oid, attr{i + 1, r.Columns[c]}, false)
			}
		}
	}
	for _, x := range sc.indexes {
		for i, a := range indexAttrs(sc, x) {
			add(userOID(x.ID), attr{i + 1, a.col}, false)
		}
	}
	for i, t := range sysTables {
		rel := sysRelation(i, t)
		for _, a := range columnsOf(rel) {
			add(int64(oidSysTableBase+i), a, false)
		}
	}
	return out
}

func attrdefRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, r := range sc.rels {
		for _, a := range columnsOf(r) {
			if a.col.Default != "" {
				oid := userOID(r.ID)
				// The attrdef oid only needs to be unique among attrdefs.
				out = append(out, []any{oid<<8 | int64(a.num&0xff), oid, a.num, a.col.Default})
			}
		}
	}
	return out
}

// typArray is pg_type.typarray: the oid of the array type of elements of
// type oid, 0 when there is none.
func typArray(oid int) int {
	for _, t := range sysTypes {
		if t.input == "array_in" && t.elem == oid {
			return t.oid
		}
	}
	return 0
}

func typeRows(*sysCtx) [][]any {
	var out [][]any
	for _, t := range sysTypes {
		typtype := t.typtype
		if typtype == "" {
			typtype = "b"
		}
		out = append(out, []any{t.oid, t.name, oidPgCatalog, oidBootstrapUser, t.len, t.byval, typtype, t.category,
			false, true, ",", 0, nil, t.elem, typArray(t.oid), t.input, nil, nil, nil, nil, nil, nil, "i", "p", false, 0, -1, 0,
			0, nil, nil, nil})
	}
	return out
}

// zeroVector is a vector of n zeros: the index columns' collations,
// operator classes (Runnel has neither) and options (0: ASC NULLS LAST).
func zeroVector(n int) string {
	return strings.TrimSpace(strings.Repeat("0 ", n))
}

func indexRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, r := range sc.rels {
		if !hasPKIndex(r) {
			continue
		}
		oid := userOID(r.ID)
		out = append(out, []any{pkIndexBase + oid, oid, len(r.PK), len(r.PK), true, false, true, false, true,
			false, true, false, true, true, false, pkAttnums(r), zeroVector(len(r.PK)), zeroVector(len(r.PK)),
			zeroVector(len(r.PK)), nil, nil})
	}
	for _, x := range sc.indexes {
		attrs := indexAttrs(sc, x)
		nums := make([]string, len(attrs))
		for i, a := range attrs {
			nums[i] = strconv.Itoa(a.num)
		}
		// indoption: DESC (1) with PostgreSQL's default for it, NULLS FIRST (2).
		opts := make([]string, len(attrs))
		for i := range opts {
			opts[i] = "0"
			if i < len(x.Index.Desc) && x.Index.Desc[i] {
				opts[i] = "3"
			}
		}
		out = append(out, []any{userOID(x.ID), userOID(x.Index.On), len(attrs), len(x.Index.Columns), false, false, false, false, true,
			false, true, false, true, true, false, strings.Join(nums, " "), zeroVector(len(attrs)), zeroVector(len(attrs)),
			strings.Join(opts, " "), nil, nil})
	}
	return out
}

// hasIndexes reports whether a relation has indexes (pg_class.relhasindex).
func (sc *sysCtx) hasIndexes(id catalog.ObjectID) bool {
	for _, x := range sc.indexes {
		if x.Index != nil && x.Index.On == id {
			return true
		}
	}
	return false
}

// indexAttrs are an index's attributes as PostgreSQL shows them: its
// declared key columns, then its INCLUDE columns (an index without
// INCLUDE stores every column, but declares none), numbered (num) by
// their position in the base relation.
func indexAttrs(sc *sysCtx, x *catalog.Relation) []attr {
	base, ok := sc.cat.Relation(x.Index.On)
	if !ok {
		return nil
	}
	var out []attr
	for _, name := range append(slices.Clone(x.Index.Columns), x.Index.Include...) {
		if i := base.ColumnIndex(name); i >= 0 {
			out = append(out, attr{i + 1, base.Columns[i]})
		}
	}
	return out
}

// indexesRows is pg_indexes: primary keys and CREATE INDEX's indexes.
func indexesRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, r := range sc.rels {
		if hasPKIndex(r) {
			out = append(out, []any{sc.schemaName(r.SchemaID), r.Name, pkName(r), nil, pkIndexDef(sc, r)})
		}
	}
	for _, x := range sc.indexes {
		if base, ok := sc.cat.Relation(x.Index.On); ok {
			out = append(out, []any{sc.schemaName(x.SchemaID), base.Name, x.Name, nil, pgIndexDef(sc.cat, x)})
		}
	}
	return out
}

func constraintRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, r := range sc.rels {
		if !hasPKIndex(r) {
			continue
		}
		oid := userOID(r.ID)
		out = append(out, []any{pkConstraintBase + oid, pkName(r), sc.schemaOIDByID(r.SchemaID), "p", false,
			false, true, oid, 0, pkIndexBase + oid, 0, 0, " ", " ", " ", true, 0, true, nil, nil, nil, nil,
			nil, nil, nil, nil})
	}
	return out
}

func databaseRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, d := range sc.cat.Databases() {
		out = append(out, []any{userOID(d.ID), d.Name, sc.ownerOID(d.Owner), 6, "c", false, true, -1, 0, 0,
			1663, "C", "C", nil, nil, nil})
	}
	return out
}

func rolesRows(withPassword bool) func(*sysCtx) [][]any {
	return func(sc *sysCtx) [][]any {
		var out [][]any
		for _, u := range sc.cat.Users() {
			var pw any = "********"
			if withPassword {
				pw = nil
				if u.Password != "" {
					pw = u.Password
				}
			}
			out = append(out, []any{userOID(u.ID), u.Name, u.Superuser, true, u.Superuser, u.Superuser,
				u.CanLogin, false, -1, pw, nil, u.Superuser, nil})
		}
		return out
	}
}

func userRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, u := range sc.cat.Users() {
		if !u.CanLogin {
			continue
		}
		out = append(out, []any{u.Name, userOID(u.ID), u.Superuser, u.Superuser, false, u.Superuser,
			"********", nil, nil})
	}
	return out
}

func settingsRows(sc *sysCtx) [][]any {
	ss := sc.ss
	ss.mu.Lock()
	names := make([]string, 0, len(ss.settings))
	vals := make(map[string]string, len(ss.settings))
	for k, v := range ss.settings {
		names = append(names, k)
		vals[k] = v
	}
	ss.mu.Unlock()
	for n, v := range presetSettings {
		names = append(names, n)
		vals[n] = v
	}
	sort.Strings(names)
	var out [][]any
	for _, n := range names {
		if v, ok := presetSettings[n]; ok {
			out = append(out, []any{n, v, nil, "Preset Options", "", nil, "internal", "integer", "default", v, v,
				nil, v, v, nil, nil, false})
			continue
		}
		out = append(out, []any{n, vals[n], nil, "Runnel", "", nil, "user", "string", "session", nil, nil,
			nil, settingDefaults[n], settingDefaults[n], nil, nil, false})
	}
	return out
}

// presetSettings are PostgreSQL's compiled-in limits that clients read
// from pg_settings (pgjdbc's getImportedKeys reads max_index_keys), with
// PostgreSQL's default values.
var presetSettings = map[string]string{
	"max_index_keys":    "32",
	"max_function_args": "100",
	"block_size":        "8192",
}

func tablesRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, r := range sc.rels {
		if relkind(r) != "r" {
			continue
		}
		out = append(out, []any{sc.schemaName(r.SchemaID), r.Name, r.Owner, nil, hasPKIndex(r), false, false, false})
	}
	return out
}

func viewsRows(kind catalog.RelationKind) func(*sysCtx) [][]any {
	return func(sc *sysCtx) [][]any {
		var out [][]any
		for _, r := range sc.rels {
			if r.Kind == kind {
				out = append(out, []any{sc.schemaName(r.SchemaID), r.Name, r.Owner, r.Definition})
			}
		}
		return out
	}
}

func matviewsRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, r := range sc.rels {
		if r.Kind == catalog.KindMaterializedView {
			out = append(out, []any{sc.schemaName(r.SchemaID), r.Name, r.Owner, nil, false, true, r.Definition})
		}
	}
	return out
}

func isTablesRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, r := range sc.rels {
		tt, ins := "BASE TABLE", "YES"
		switch r.Kind {
		case catalog.KindMaterializedView:
			continue // PostgreSQL leaves materialized views out
		case catalog.KindView:
			tt, ins = "VIEW", "NO"
		}
		out = append(out, []any{sc.db.Name, sc.schemaName(r.SchemaID), r.Name, tt, nil, nil, nil, nil, nil,
			ins, "NO", nil})
	}
	return out
}

func isColumnsRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, r := range sc.rels {
		for _, a := range columnsOf(r) {
			t := a.col.Type
			var def any
			if a.col.Default != "" {
				def = a.col.Default
			}
			nullable := "YES"
			if a.col.NotNull {
				nullable = "NO"
			}
			var charLen any
			if t.OID() == 1043 && t.Mod >= 0 {
				charLen = int(t.Mod)
			}
			udt := ""
			for _, st := range sysTypes {
				if uint32(st.oid) == t.OID() {
					udt = st.name
				}
			}
			dataType := formatType(t.OID(), -1, false)
			out = append(out, []any{sc.db.Name, sc.schemaName(r.SchemaID), r.Name, a.col.Name, a.num, def,
				nullable, dataType, charLen, nil, nil, nil, nil, nil, sc.db.Name, "pg_catalog", udt, "NO",
				"NEVER", map[bool]string{true: "YES", false: "NO"}[r.Kind == catalog.KindTable]})
		}
	}
	return out
}

func isSchemataRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, s := range sc.allSchemas() {
		owner := "root"
		for _, u := range sc.cat.Users() {
			if userOID(u.ID) == toInt64(s[2]) {
				owner = u.Name
			}
		}
		out = append(out, []any{sc.db.Name, s[1], owner, nil, nil, nil, nil})
	}
	return out
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	}
	return 0
}

// descriptionRows is pg_description: COMMENT ON relations (objsubid 0) and
// their columns (objsubid = attnum); classoid is pg_class's.
func descriptionRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, r := range sc.rels {
		oid := userOID(r.ID)
		if r.Comment != "" {
			out = append(out, []any{oid, 1259, 0, r.Comment})
		}
		for _, a := range columnsOf(r) {
			if a.col.Comment != "" {
				out = append(out, []any{oid, 1259, a.num, a.col.Comment})
			}
		}
	}
	return out
}
