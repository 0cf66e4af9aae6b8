package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/runneldb/runnel/internal/metastore"
)

// Default names created on first start.
const (
	DefaultDatabase = "dev"
	DefaultSchema   = "public"
	DefaultUser     = "root"
)

// ErrNotFound is returned (wrapped) when a named object does not exist.
var ErrNotFound = errors.New("catalog object not found")

// User is a login role.
type User struct {
	ID        ObjectID
	Name      string
	Superuser bool
	CanLogin  bool
	// Password is a SCRAM-SHA-256 verifier ("" when the user has none).
	Password string
}

// Catalog is the durable catalog plus its in-memory copy. Reads take a
// read lock on the copy; each change is one metadata transaction, applied
// to the copy only after it commits.
type Catalog struct {
	db *metastore.DB

	mu        sync.RWMutex
	databases map[ObjectID]*Database
	schemas   map[ObjectID]*Schema
	relations map[ObjectID]*Relation
	users     map[ObjectID]*User
	functions map[ObjectID]*Function
	// version increases on every committed change; caches compare it.
	version uint64
}

// object kinds as stored in catalog_object.kind
const (
	objDatabase = "database"
	objSchema   = "schema"
	objRelation = "relation"
	objUser     = "user"
)

// Open loads the catalog, creating its tables and the default database,
// schema and superuser on first start.
func Open(ctx context.Context, db *metastore.DB) (*Catalog, error) {
	if err := createSchema(ctx, db); err != nil {
		return nil, err
	}
	c := &Catalog{db: db}
	if err := c.load(ctx); err != nil {
		return nil, err
	}
	if err := c.bootstrap(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// catalogMigrations is the catalog's metastore schema, applied through
// metastore.DB.Migrate under the component name "catalog" (the schema's
// version, which restore and upgrades read). Step 1 uses IF NOT EXISTS:
// data directories written before the catalog had versioned steps hold
// these tables already, and adopt step 1 on first open. Never edit an
// applied step; add one.
var catalogMigrations = []metastore.Migration{{
	Version: 1,
	Name:    "catalog objects, id allocators, system parameters",
	SQL: `CREATE TABLE IF NOT EXISTS catalog_object (id BIGINT PRIMARY KEY, kind TEXT NOT NULL, payload TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS catalog_id_allocator (name TEXT PRIMARY KEY, next_id BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS catalog_system_param (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
}}

// Migrations returns the catalog's schema steps (restore applies those a
// backup was taken at before loading its rows).
func Migrations() []metastore.Migration {
	return append([]metastore.Migration(nil), catalogMigrations...)
}

func createSchema(ctx context.Context, db *metastore.DB) error {
	if err := db.Migrate(ctx, "catalog", catalogMigrations); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}

func (c *Catalog) load(ctx context.Context) error {
	c.databases = map[ObjectID]*Database{}
	c.schemas = map[ObjectID]*Schema{}
	c.relations = map[ObjectID]*Relation{}
	c.users = map[ObjectID]*User{}
	c.functions = map[ObjectID]*Function{}
	rows, err := c.db.Query(ctx, `SELECT id, kind, payload FROM catalog_object ORDER BY id`)
	if err != nil {
		return fmt.Errorf("catalog: load: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      int64
			kind    string
			payload string
		)
		if err := rows.Scan(&id, &kind, &payload); err != nil {
			return fmt.Errorf("catalog: load: %w", err)
		}
		var target any
		switch kind {
		case objDatabase:
			d := &Database{}
			c.databases[ObjectID(id)] = d
			target = d
		case objSchema:
			s := &Schema{}
			c.schemas[ObjectID(id)] = s
			target = s
		case objRelation:
			r := &Relation{}
			c.relations[ObjectID(id)] = r
			target = r
		case objUser:
			u := &User{}
			c.users[ObjectID(id)] = u
			target = u
		case objFunction:
			f := &Function{}
			c.functions[ObjectID(id)] = f
			target = f
		default:
			return fmt.Errorf("catalog: object %d has unknown kind %q", id, kind)
		}
		if err := json.Unmarshal([]byte(payload), target); err != nil {
			return fmt.Errorf("catalog: object %d (%s): corrupt payload: %w", id, kind, err)
		}
	}
	return rows.Err()
}

func (c *Catalog) bootstrap(ctx context.Context) error {
	if _, err := c.UserByName(DefaultUser); errors.Is(err, ErrNotFound) {
		if _, err := c.CreateUser(ctx, User{Name: DefaultUser, Superuser: true, CanLogin: true}); err != nil {
			return err
		}
	}
	if _, err := c.DatabaseByName(DefaultDatabase); errors.Is(err, ErrNotFound) {
		if _, err := c.CreateDatabase(ctx, DefaultDatabase, DefaultUser); err != nil {
			return err
		}
	}
	return nil
}

// Version returns a number that changes whenever the catalog changes.
func (c *Catalog) Version() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.version
}

// allocateIDs reserves n consecutive ids from the named durable allocator
// inside tx. Ids are never reused, even when tx's object is later dropped.
func allocateIDs(ctx context.Context, tx *metastore.Tx, name string, n int) (uint64, error) {
	var next int64
	err := tx.QueryRow(ctx, `SELECT next_id FROM catalog_id_allocator WHERE name = $1`, name).Scan(&next)
	switch {
	case err == nil:
		if _, err := tx.Exec(ctx, `UPDATE catalog_id_allocator SET next_id = $1 WHERE name = $2`, next+int64(n), name); err != nil {
			return 0, err
		}
	case isNoRows(err):
		next = 1
		if _, err := tx.Exec(ctx, `INSERT INTO catalog_id_allocator (name, next_id) VALUES ($1, $2)`, name, next+int64(n)); err != nil {
			return 0, err
		}
	default:
		return 0, err
	}
	return uint64(next), nil
}

func put(ctx context.Context, tx *metastore.Tx, id ObjectID, kind string, obj any) error {
	payload, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM catalog_object WHERE id = $1`, int64(id)); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO catalog_object (id, kind, payload) VALUES ($1, $2, $3)`, int64(id), kind, string(payload))
	return err
}

// mutate runs fn in a metadata transaction while holding the write lock,
// and on commit applies apply to the in-memory copy.
func (c *Catalog) mutate(ctx context.Context, fn func(tx *metastore.Tx) error, apply func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.db.Tx(ctx, fn); err != nil {
		// An ambiguous commit error leaves memory possibly behind the store;
		// reload so that memory reflects what is durable.
		if rerr := c.reloadLocked(ctx); rerr != nil {
			return fmt.Errorf("%w (and reloading the catalog failed: %v)", err, rerr)
		}
		return err
	}
	apply()
	c.version++
	return nil
}

func (c *Catalog) reloadLocked(ctx context.Context) error {
	return c.load(ctx)
}

// CreateDatabase creates a database with its public schema.
func (c *Catalog) CreateDatabase(ctx context.Context, name, owner string) (*Database, error) {
	if _, err := c.DatabaseByName(name); err == nil {
		return nil, fmt.Errorf("database %q already exists", name)
	}
	var db *Database
	var sc *Schema
	err := c.mutate(ctx, func(tx *metastore.Tx) error {
		id, err := allocateIDs(ctx, tx, "object", 2)
		if err != nil {
			return err
		}
		db = &Database{ID: ObjectID(id), Name: name, Owner: owner}
		sc = &Schema{ID: ObjectID(id + 1), DatabaseID: db.ID, Name: DefaultSchema, Owner: owner}
		if err := put(ctx, tx, db.ID, objDatabase, db); err != nil {
			return err
		}
		return put(ctx, tx, sc.ID, objSchema, sc)
	}, func() {
		c.databases[db.ID] = db
		c.schemas[sc.ID] = sc
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: create database %s: %w", name, err)
	}
	return db, nil
}

// CreateSchema creates a schema in a database.
func (c *Catalog) CreateSchema(ctx context.Context, dbID ObjectID, name, owner string) (*Schema, error) {
	var sc *Schema
	err := c.mutate(ctx, func(tx *metastore.Tx) error {
		id, err := allocateIDs(ctx, tx, "object", 1)
		if err != nil {
			return err
		}
		sc = &Schema{ID: ObjectID(id), DatabaseID: dbID, Name: name, Owner: owner}
		return put(ctx, tx, sc.ID, objSchema, sc)
	}, func() { c.schemas[sc.ID] = sc })
	if err != nil {
		return nil, fmt.Errorf("catalog: create schema %s: %w", name, err)
	}
	return sc, nil
}

// CreateUser creates a login role.
func (c *Catalog) CreateUser(ctx context.Context, u User) (*User, error) {
	nu := u
	err := c.mutate(ctx, func(tx *metastore.Tx) error {
		id, err := allocateIDs(ctx, tx, "object", 1)
		if err != nil {
			return err
		}
		nu.ID = ObjectID(id)
		return put(ctx, tx, nu.ID, objUser, &nu)
	}, func() { c.users[nu.ID] = &nu })
	if err != nil {
		return nil, fmt.Errorf("catalog: create user %s: %w", u.Name, err)
	}
	return &nu, nil
}

// UpdateUser replaces a user's attributes.
func (c *Catalog) UpdateUser(ctx context.Context, u User) error {
	nu := u
	err := c.mutate(ctx, func(tx *metastore.Tx) error {
		return put(ctx, tx, nu.ID, objUser, &nu)
	}, func() { c.users[nu.ID] = &nu })
	if err != nil {
		return fmt.Errorf("catalog: alter user %s: %w", u.Name, err)
	}
	return nil
}

// DropObject removes a database, schema, user, relation or function by id.
func (c *Catalog) DropObject(ctx context.Context, id ObjectID) error {
	err := c.mutate(ctx, func(tx *metastore.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM catalog_object WHERE id = $1`, int64(id))
		return err
	}, func() {
		delete(c.databases, id)
		delete(c.schemas, id)
		delete(c.relations, id)
		delete(c.users, id)
		delete(c.functions, id)
	})
	if err != nil {
		return fmt.Errorf("catalog: drop object %d: %w", id, err)
	}
	return nil
}

// CreateRelation assigns rel an id (and, when stateTables > 0, that many
// fresh state-table ids, the first of which becomes rel.StateTable) and
// stores it. It returns the allocated state-table ids. With stateTables
// = 0, rel.StateTable is kept as the caller set it (ids allocated earlier
// with AllocateTableIDs, so that storage could register them first).
func (c *Catalog) CreateRelation(ctx context.Context, rel *Relation, stateTables int) ([]TableID, error) {
	var tables []TableID
	err := c.mutate(ctx, func(tx *metastore.Tx) error {
		id, err := allocateIDs(ctx, tx, "object", 1)
		if err != nil {
			return err
		}
		rel.ID = ObjectID(id)
		tables = tables[:0]
		if stateTables > 0 {
			first, err := allocateIDs(ctx, tx, "state_table", stateTables)
			if err != nil {
				return err
			}
			for i := 0; i < stateTables; i++ {
				tables = append(tables, TableID(first+uint64(i)))
			}
			rel.StateTable = tables[0]
		}
		return put(ctx, tx, rel.ID, objRelation, rel)
	}, func() { c.relations[rel.ID] = rel })
	if err != nil {
		return nil, fmt.Errorf("catalog: create %s %s: %w", rel.Kind, rel.Name, err)
	}
	return tables, nil
}

// AllocateTableIDs reserves n fresh state-table ids.
func (c *Catalog) AllocateTableIDs(ctx context.Context, n int) ([]TableID, error) {
	var out []TableID
	err := c.db.Tx(ctx, func(tx *metastore.Tx) error {
		first, err := allocateIDs(ctx, tx, "state_table", n)
		if err != nil {
			return err
		}
		out = out[:0]
		for i := 0; i < n; i++ {
			out = append(out, TableID(first+uint64(i)))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: allocate table ids: %w", err)
	}
	return out, nil
}

// UpdateRelation stores a changed relation (same id).
func (c *Catalog) UpdateRelation(ctx context.Context, rel *Relation) error {
	err := c.mutate(ctx, func(tx *metastore.Tx) error {
		return put(ctx, tx, rel.ID, objRelation, rel)
	}, func() { c.relations[rel.ID] = rel })
	if err != nil {
		return fmt.Errorf("catalog: update %s %s: %w", rel.Kind, rel.Name, err)
	}
	return nil
}

// DatabaseByName finds a database.
func (c *Catalog) DatabaseByName(name string) (*Database, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, d := range c.databases {
		if d.Name == name {
			return d, nil
		}
	}
	return nil, fmt.Errorf("database %q: %w", name, ErrNotFound)
}

// SchemaByName finds a schema of a database.
func (c *Catalog) SchemaByName(dbID ObjectID, name string) (*Schema, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, s := range c.schemas {
		if s.DatabaseID == dbID && s.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("schema %q: %w", name, ErrNotFound)
}

// UserByName finds a user.
func (c *Catalog) UserByName(name string) (*User, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, u := range c.users {
		if u.Name == name {
			cp := *u
			return &cp, nil
		}
	}
	return nil, fmt.Errorf("user %q: %w", name, ErrNotFound)
}

// RelationByName finds a relation in a schema.
func (c *Catalog) RelationByName(schemaID ObjectID, name string) (*Relation, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, r := range c.relations {
		if r.SchemaID == schemaID && r.Name == name {
			return r, nil
		}
	}
	return nil, fmt.Errorf("relation %q: %w", name, ErrNotFound)
}

// Relation returns a relation by id.
func (c *Catalog) Relation(id ObjectID) (*Relation, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.relations[id]
	return r, ok
}

// Databases lists databases sorted by name.
func (c *Catalog) Databases() []*Database {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Database, 0, len(c.databases))
	for _, d := range c.databases {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Schemas lists a database's schemas sorted by name.
func (c *Catalog) Schemas(dbID ObjectID) []*Schema {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*Schema
	for _, s := range c.schemas {
		if s.DatabaseID == dbID {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Relations lists relations matching filter (nil: all), sorted by id.
func (c *Catalog) Relations(filter func(*Relation) bool) []*Relation {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*Relation
	for _, r := range c.relations {
		if filter == nil || filter(r) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Users lists users sorted by name.
func (c *Catalog) Users() []*User {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*User
	for _, u := range c.users {
		cp := *u
		out = append(out, &cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Dependents lists relations that depend on id.
func (c *Catalog) Dependents(id ObjectID) []*Relation {
	return c.Relations(func(r *Relation) bool {
		for _, d := range r.DependsOn {
			if d == id {
				return true
			}
		}
		return false
	})
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// MigrateMetastore creates or upgrades the catalog's tables without
// loading the catalog (for tools such as backup).
func MigrateMetastore(ctx context.Context, db *metastore.DB) error { return createSchema(ctx, db) }
