package frontend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/connector/datagen"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/streamplan"
	"github.com/runneldb/runnel/internal/tsdb"
	"github.com/runneldb/runnel/internal/types"
)

// resolveSchema returns the named schema, or the current one for "".
func (ss *session) resolveSchema(name string) (*catalog.Schema, error) {
	if name == "" {
		return ss.currentSchema()
	}
	sc, err := ss.s.catalog.SchemaByName(ss.db.ID, name)
	if err != nil {
		return nil, sqlerr.Errorf(sqlerr.InvalidSchemaName, "schema %q does not exist", name)
	}
	return sc, nil
}

// createTable runs CREATE TABLE. Order: allocate state-table ids, register
// them in the storage version, store the catalog entry, start the actor.
// A crash between the steps leaves at worst an empty registered table that
// no catalog entry names: no data can be lost or half-visible.
func (ss *session) createTable(ctx context.Context, ct *binder.CreateTable) (pgwire.Result, error) {
	s := ss.s
	sc, err := ss.resolveSchema(ct.Schema)
	if err != nil {
		return pgwire.Result{}, err
	}
	if _, err := s.catalog.RelationByName(sc.ID, ct.Name); err == nil {
		if ct.IfNotExists {
			ss.client.Notice(pgwire.Notice{Code: sqlerr.DuplicateTable, Message: fmt.Sprintf("relation %q already exists, skipping", ct.Name)})
			return pgwire.Result{Tag: "CREATE TABLE"}, nil
		}
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.DuplicateTable, "relation %q already exists", ct.Name)
	}
	if ct.Source {
		return ss.createSource(ctx, sc, ct)
	}
	rel := &catalog.Relation{
		DatabaseID: ss.db.ID,
		SchemaID:   sc.ID,
		Name:       ct.Name,
		Kind:       catalog.KindTable,
		Owner:      ss.user.Name,
		PK:         append([]int(nil), ct.PK...),
		AppendOnly: ct.AppendOnly,
		Options:    connector.FormatOptions(ct.Options, ct.Format, ct.Encode, ct.EncodeOptions),
		Watermark:  catalogWatermark(ct), // see watermark.go
	}
	if ct.FromSource != "" || isCDC(ct.Options) { // see cdc.go
		opts, src, err := ss.cdcTableOptions(ct)
		if err != nil {
			return pgwire.Result{}, err
		}
		rel.Options = opts
		if src != nil {
			rel.DependsOn = []catalog.ObjectID{src.ID}
		}
	}
	if ct.StarColumns {
		if err := starColumns(ctx, ct, rel.Options); err != nil {
			return pgwire.Result{}, err
		}
		rel.PK = append([]int(nil), ct.PK...)
	}
	if err := inferColumns(ct, rel.Options); err != nil {
		return pgwire.Result{}, err
	}
	seen := map[string]bool{}
	for _, c := range ct.Columns {
		if seen[c.Name] {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.DuplicateColumn, "column %q specified more than once", c.Name)
		}
		seen[c.Name] = true
		rel.Columns = append(rel.Columns, catalog.Column{Name: c.Name, Type: c.Type, NotNull: c.NotNull, Default: c.DefaultText})
	}
	if tsdb.IsTimeSeries(rel) {
		// Tags, time index, append mode, TTL (internal/tsdb).
		if err := tsdb.Layout(rel, RowIDColumn); err != nil {
			return pgwire.Result{}, err
		}
	}
	if len(rel.PK) == 0 {
		rel.Columns = append(rel.Columns, catalog.Column{Name: RowIDColumn, Type: types.Int64, NotNull: true, Hidden: true})
		rel.PK = []int{len(rel.Columns) - 1}
	}
	for _, k := range rel.PK {
		rel.Columns[k].NotNull = true
	}
	if rel.DistKey == nil {
		rel.DistKey = append([]int(nil), rel.PK...)
	}
	nTables := 1
	if _, ok := rel.Options["connector"]; ok {
		// A table with a connector stores what the connector delivers
		// (and accepts DML); its second state table holds the split
		// positions. Bad options fail the CREATE.
		if strings.EqualFold(ct.Options["connector"], "datagen") {
			rel.Options = datagen.PinOptions(streamplan.ConnectorColumns(rel), ct.Options, time.Now())
		}
		if err := connector.Validate(streamplan.ExternalSpec(rel, s.log)); err != nil {
			return pgwire.Result{}, err
		}
		ss.warnUnknownOptions(ct.Options)
		if isCDC(rel.Options) {
			if err := s.checkCDCTable(ctx, rel); err != nil {
				return pgwire.Result{}, err
			}
		}
		nTables = 2
	}

	if err := s.meta.CreateTable(ctx, rel, nTables); err != nil {
		return pgwire.Result{}, err
	}
	return pgwire.Result{Tag: "CREATE TABLE"}, nil
}

// drop runs DROP TABLE / DATABASE / SCHEMA / USER (views come with the
// streaming planner).
func (ss *session) drop(ctx context.Context, d *binder.Drop) (pgwire.Result, error) {
	tag := "DROP " + strings.ToUpper(d.Type.String())
	for _, n := range d.Names {
		var err error
		switch d.Type {
		case binder.ObjTable, binder.ObjMaterializedView, binder.ObjView, binder.ObjSource, binder.ObjIndex:
			err = ss.dropRelation(ctx, d, n)
		case binder.ObjDatabase:
			err = ss.dropDatabase(ctx, d, n.Name)
		case binder.ObjSchema:
			err = ss.dropSchema(ctx, d, n.Name)
		case binder.ObjUser:
			err = ss.dropUser(ctx, d, n.Name)
		default:
			err = sqlerr.Errorf(sqlerr.FeatureNotSupported, "DROP %s is not supported", strings.ToUpper(d.Type.String()))
		}
		if err != nil {
			return pgwire.Result{}, err
		}
	}
	return pgwire.Result{Tag: tag}, nil
}

func relKindFor(t binder.ObjectType) catalog.RelationKind {
	switch t {
	case binder.ObjMaterializedView:
		return catalog.KindMaterializedView
	case binder.ObjView:
		return catalog.KindView
	case binder.ObjSource:
		return catalog.KindSource
	case binder.ObjIndex:
		return catalog.KindIndex
	}
	return catalog.KindTable
}

func (ss *session) dropRelation(ctx context.Context, d *binder.Drop, n binder.QualName) error {
	s := ss.s
	var rel *catalog.Relation
	if n.Schema != "" {
		sc, err := ss.resolveSchema(n.Schema)
		if err != nil {
			return err
		}
		rel, _ = s.catalog.RelationByName(sc.ID, n.Name)
	} else {
		rel, _ = (&sessionCatalog{ss: ss}).ResolveRelation("", n.Name)
	}
	want := relKindFor(d.Type)
	if rel == nil {
		if d.IfExists {
			ss.client.Notice(pgwire.Notice{Message: fmt.Sprintf("%s %q does not exist, skipping", want, n.Name)})
			return nil
		}
		code := sqlerr.UndefinedTable
		if want == catalog.KindIndex {
			code = sqlerr.UndefinedObject // PostgreSQL's for a missing index
		}
		return sqlerr.Errorf(code, "%s %q does not exist", want, n.Name)
	}
	if rel.Kind != want {
		return sqlerr.Errorf(sqlerr.WrongObjectType, "%q is not a %s", n.Name, want).
			WithHint("Use DROP %s to remove a %s.", strings.ToUpper(rel.Kind.String()), rel.Kind)
	}
	if err := ss.requireOwner(rel); err != nil {
		return err
	}
	// A relation's indexes go with it without CASCADE, as in PostgreSQL
	// (the drop removes them first: metasrv's dropOrder).
	deps := slices.DeleteFunc(s.catalog.Dependents(rel.ID), func(r *catalog.Relation) bool {
		return r.Kind == catalog.KindIndex && r.Index != nil && r.Index.On == rel.ID
	})
	if len(deps) > 0 && !d.Cascade {
		var names []string
		for _, dep := range deps {
			names = append(names, fmt.Sprintf("%s %s depends on %s %s", dep.Kind, dep.Name, rel.Kind, rel.Name))
		}
		return sqlerr.Errorf(sqlerr.DependentObjectsStillExist, "cannot drop %s %s because other objects depend on it", rel.Kind, rel.Name).
			WithDetail("%s", strings.Join(names, "\n")).
			WithHint("Use DROP ... CASCADE to drop the dependent objects too.")
	}
	return s.meta.DropRelation(ctx, rel)
}

func (ss *session) createDatabase(ctx context.Context, cd *binder.CreateDatabase) (pgwire.Result, error) {
	if _, err := ss.s.catalog.DatabaseByName(cd.Name); err == nil {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.DuplicateDatabase, "database %q already exists", cd.Name)
	}
	if _, err := ss.s.meta.CreateDatabase(ctx, cd.Name, ss.user.Name); err != nil {
		return pgwire.Result{}, err
	}
	return pgwire.Result{Tag: "CREATE DATABASE"}, nil
}

func (ss *session) dropDatabase(ctx context.Context, d *binder.Drop, name string) error {
	db, err := ss.s.catalog.DatabaseByName(name)
	if errors.Is(err, catalog.ErrNotFound) {
		if d.IfExists {
			ss.client.Notice(pgwire.Notice{Message: fmt.Sprintf("database %q does not exist, skipping", name)})
			return nil
		}
		return sqlerr.Errorf(sqlerr.InvalidCatalogName, "database %q does not exist", name)
	}
	if db.ID == ss.db.ID {
		return sqlerr.New(sqlerr.ObjectInUse, "cannot drop the currently open database")
	}
	if rels := ss.s.catalog.Relations(func(r *catalog.Relation) bool { return r.DatabaseID == db.ID }); len(rels) > 0 {
		return sqlerr.Errorf(sqlerr.DependentObjectsStillExist, "database %q is not empty: it holds %d relations", name, len(rels))
	}
	for _, sc := range ss.s.catalog.Schemas(db.ID) {
		if err := ss.s.meta.DropObject(ctx, sc.ID); err != nil {
			return err
		}
	}
	return ss.s.meta.DropObject(ctx, db.ID)
}

func (ss *session) createSchema(ctx context.Context, cs *binder.CreateSchema) (pgwire.Result, error) {
	if _, err := ss.s.catalog.SchemaByName(ss.db.ID, cs.Name); err == nil {
		if cs.IfNotExists {
			ss.client.Notice(pgwire.Notice{Code: sqlerr.DuplicateSchema, Message: fmt.Sprintf("schema %q already exists, skipping", cs.Name)})
			return pgwire.Result{Tag: "CREATE SCHEMA"}, nil
		}
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.DuplicateSchema, "schema %q already exists", cs.Name)
	}
	if _, err := ss.s.meta.CreateSchema(ctx, ss.db.ID, cs.Name, ss.user.Name); err != nil {
		return pgwire.Result{}, err
	}
	return pgwire.Result{Tag: "CREATE SCHEMA"}, nil
}

func (ss *session) dropSchema(ctx context.Context, d *binder.Drop, name string) error {
	sc, err := ss.s.catalog.SchemaByName(ss.db.ID, name)
	if err != nil {
		if d.IfExists {
			ss.client.Notice(pgwire.Notice{Message: fmt.Sprintf("schema %q does not exist, skipping", name)})
			return nil
		}
		return sqlerr.Errorf(sqlerr.InvalidSchemaName, "schema %q does not exist", name)
	}
	rels := ss.s.catalog.Relations(func(r *catalog.Relation) bool { return r.SchemaID == sc.ID })
	funcs := ss.s.catalog.Functions(func(f *catalog.Function) bool { return f.SchemaID == sc.ID })
	if len(rels)+len(funcs) > 0 && !d.Cascade {
		return sqlerr.Errorf(sqlerr.DependentObjectsStillExist, "cannot drop schema %s because other objects depend on it", name).
			WithHint("Use DROP ... CASCADE to drop the dependent objects too.")
	}
	for i := len(rels) - 1; i >= 0; i-- {
		r, ok := ss.s.catalog.Relation(rels[i].ID)
		if !ok {
			continue // dropped with a dependency
		}
		if err := ss.s.meta.DropRelation(ctx, r); err != nil {
			return err
		}
	}
	for _, f := range funcs {
		// Views in other schemas that inlined it go with it (CASCADE).
		if _, err := ss.dropFunction(ctx, &binder.DropFunction{Cascade: true,
			Funcs: []binder.FuncRef{{Schema: name, Name: f.Name, ArgTypes: f.ArgTypes, ArgsGiven: true}}}); err != nil {
			return err
		}
	}
	return ss.s.meta.DropObject(ctx, sc.ID)
}

func (ss *session) createUser(ctx context.Context, cu *binder.CreateUser) (pgwire.Result, error) {
	if !ss.user.Superuser {
		return pgwire.Result{}, sqlerr.New(sqlerr.InsufficientPrivilege, "permission denied to create or alter role")
	}
	existing, err := ss.s.catalog.UserByName(cu.Name)
	if cu.Alter {
		if err != nil {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.UndefinedObject, "role %q does not exist", cu.Name)
		}
		u := *existing
		applyUserOptions(&u, cu)
		if err := ss.s.meta.UpdateUser(ctx, u); err != nil {
			return pgwire.Result{}, err
		}
		return pgwire.Result{Tag: "ALTER ROLE"}, nil
	}
	if err == nil {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.DuplicateObject, "role %q already exists", cu.Name)
	}
	u := catalog.User{Name: cu.Name, CanLogin: true}
	if v, ok := cu.Flags["login"]; ok {
		u.CanLogin = v
	}
	applyUserOptions(&u, cu)
	if _, err := ss.s.meta.CreateUser(ctx, u); err != nil {
		return pgwire.Result{}, err
	}
	return pgwire.Result{Tag: "CREATE ROLE"}, nil
}

func applyUserOptions(u *catalog.User, cu *binder.CreateUser) {
	if cu.Password != nil {
		u.Password = pgwire.NewSCRAMVerifier(*cu.Password)
	}
	if cu.PasswordNull {
		u.Password = ""
	}
	if v, ok := cu.Flags["superuser"]; ok {
		u.Superuser = v
	}
	if v, ok := cu.Flags["login"]; ok {
		u.CanLogin = v
	}
}

func (ss *session) dropUser(ctx context.Context, d *binder.Drop, name string) error {
	if !ss.user.Superuser {
		return sqlerr.New(sqlerr.InsufficientPrivilege, "permission denied to drop role")
	}
	u, err := ss.s.catalog.UserByName(name)
	if err != nil {
		if d.IfExists {
			ss.client.Notice(pgwire.Notice{Message: fmt.Sprintf("role %q does not exist, skipping", name)})
			return nil
		}
		return sqlerr.Errorf(sqlerr.UndefinedObject, "role %q does not exist", name)
	}
	if u.Name == ss.user.Name {
		return sqlerr.New(sqlerr.ObjectInUse, "current user cannot be dropped")
	}
	return ss.s.meta.DropObject(ctx, u.ID)
}

// createSource runs CREATE SOURCE: a relation fed by a connector, with no
// storage of its own. Every materialized view reading it runs the
// connector in its own actors, from the start. The options are checked
// now so that a bad one fails the CREATE, not a later view.
func (ss *session) createSource(ctx context.Context, sc *catalog.Schema, ct *binder.CreateTable) (pgwire.Result, error) {
	s := ss.s
	if _, ok := ct.Options["connector"]; !ok {
		return pgwire.Result{}, sqlerr.New(sqlerr.InvalidParameterValue, "CREATE SOURCE needs WITH (connector = '...')")
	}
	rel := &catalog.Relation{DatabaseID: ss.db.ID, SchemaID: sc.ID, Name: ct.Name, Kind: catalog.KindSource,
		Owner: ss.user.Name, AppendOnly: true, Options: connector.FormatOptions(ct.Options, ct.Format, ct.Encode, ct.EncodeOptions),
		Watermark: catalogWatermark(ct)}
	if err := inferColumns(ct, rel.Options); err != nil {
		return pgwire.Result{}, err
	}
	var cols []connector.Column
	for _, c := range ct.Columns {
		rel.Columns = append(rel.Columns, catalog.Column{Name: c.Name, Type: c.Type, NotNull: c.NotNull})
		cols = append(cols, connector.Column{Name: c.Name, Type: c.Type})
	}
	if strings.EqualFold(ct.Options["connector"], "datagen") {
		// Pin now() so that the source's rows never depend on when a view
		// (re)starts reading it.
		rel.Options = datagen.PinOptions(cols, ct.Options, time.Now())
	}
	if isCDC(rel.Options) {
		if len(cols) > 0 {
			return pgwire.Result{}, sqlerr.New(sqlerr.FeatureNotSupported, "a postgres-cdc source has no columns: declare them on CREATE TABLE ... FROM source TABLE 'schema.table'")
		}
		if err := checkCDCSource(ctx, rel.Options); err != nil {
			return pgwire.Result{}, err
		}
	} else if err := connector.Validate(connector.Spec{Name: rel.Name, Columns: cols, Options: rel.Options, Log: s.log}); err != nil {
		return pgwire.Result{}, err
	}
	ss.warnUnknownOptions(rel.Options)
	rel.Columns = append(rel.Columns, catalog.Column{Name: RowIDColumn, Type: types.Int64, NotNull: true, Hidden: true})
	rel.PK = []int{len(rel.Columns) - 1}
	if err := s.meta.CreateRelation(ctx, rel); err != nil {
		return pgwire.Result{}, err
	}
	return pgwire.Result{Tag: "CREATE SOURCE"}, nil
}

// inferColumns gives a CREATE SOURCE or CREATE TABLE that declares no
// columns the ones its connector reads from the schema its options name
// (ENCODE PROTOBUF: the message's fields), as RisingWave does.
func inferColumns(ct *binder.CreateTable, options map[string]string) error {
	if len(ct.Columns) > 0 {
		return nil
	}
	cols, err := connector.InferColumns(options)
	if err != nil {
		return err
	}
	for _, c := range cols {
		ct.Columns = append(ct.Columns, binder.ColumnDef{Name: c.Name, Type: c.Type})
	}
	return nil
}

// warnUnknownOptions sends a WARNING for each WITH option the connector
// does not use: a misspelt key would otherwise be ignored in silence.
func (ss *session) warnUnknownOptions(opts map[string]string) {
	for _, k := range connector.UnknownOptions(opts) {
		ss.client.Notice(pgwire.Notice{Severity: "WARNING", Message: fmt.Sprintf("WITH option %q is not used by the %s connector; it is ignored", k, opts["connector"])})
	}
}
