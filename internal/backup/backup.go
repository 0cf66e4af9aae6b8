package backup

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/cluster"
	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/storage"
)

// Format is the manifest format this binary writes and the newest it reads.
const Format = 1

const (
	manifestName  = "manifest.json"
	metastoreName = "metastore.json.gz"
	// migrationsTable is metastore's record of applied schema steps.
	migrationsTable = "runnel_schema_migrations"
	// pinsTable holds the pins of backups in progress; never restored.
	pinsTable = "storage_backup_pins"
)

// components are the metastore schemas a backup may contain, with the
// steps restore applies.
var components = map[string]func() []metastore.Migration{
	"storage": storage.Migrations,
	"catalog": catalog.Migrations,
	// The leadership and node tables: a restored process with every role
	// takes the leadership over (a higher term) and marks the nodes of
	// the backup expired.
	"cluster": cluster.Migrations,
}

// Manifest describes one complete backup.
type Manifest struct {
	Format         int         `json:"format"`
	ID             string      `json:"id"`
	Created        time.Time   `json:"created"`
	VersionID      uint64      `json:"version_id"`
	CommittedEpoch uint64      `json:"committed_epoch"`
	Dialect        string      `json:"dialect"`
	Schema         []SchemaRef `json:"schema"`
	Metastore      Object      `json:"metastore"`
	Objects        []Object    `json:"objects"`
}

// SchemaRef is the newest applied schema step of one component.
type SchemaRef struct {
	Component string `json:"component"`
	Version   int    `json:"version"`
}

// Object is one file of the backup: its key in the source object store
// (for SSTs) or in the backup, its size and SHA-256.
type Object struct {
	Key    string `json:"key"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Bytes is the backup's size in the backup store.
func (m Manifest) Bytes() int64 {
	n := m.Metastore.Size
	for _, o := range m.Objects {
		n += o.Size
	}
	return n
}

// dump is every metastore table's rows.
type dump struct {
	Tables []table `json:"tables"`
}

type table struct {
	Name    string    `json:"name"`
	Columns []string  `json:"columns"`
	Rows    [][]value `json:"rows"`
}

// value is one typed cell; all fields nil is SQL NULL.
type value struct {
	I *int64   `json:"i,omitempty"`
	F *float64 `json:"f,omitempty"`
	S *string  `json:"s,omitempty"`
	B *[]byte  `json:"b,omitempty"`
	T *bool    `json:"t,omitempty"`
}

func toValue(v any) (value, error) {
	switch x := v.(type) {
	case nil:
		return value{}, nil
	case int64:
		return value{I: &x}, nil
	case float64:
		return value{F: &x}, nil
	case string:
		return value{S: &x}, nil
	case []byte:
		b := slices.Clone(x)
		return value{B: &b}, nil
	case bool:
		return value{T: &x}, nil
	}
	return value{}, fmt.Errorf("unsupported column value of type %T", v)
}

func (v value) arg() any {
	switch {
	case v.I != nil:
		return *v.I
	case v.F != nil:
		return *v.F
	case v.S != nil:
		return *v.S
	case v.B != nil:
		return *v.B
	case v.T != nil:
		return *v.T
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// querier is what both *metastore.DB and *metastore.Tx offer for reads.
type querier interface {
	Query(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// listTables names the metastore's tables.
func listTables(ctx context.Context, q querier, d metastore.Dialect) ([]string, error) {
	query := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
	if d == metastore.Postgres {
		query = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
	}
	rows, err := q.Query(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("backup: list metastore tables: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("backup: list metastore tables: %w", err)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, rows.Err()
}

func readTable(ctx context.Context, q querier, name string) (table, error) {
	rows, err := q.Query(ctx, `SELECT * FROM `+quoteIdent(name))
	if err != nil {
		return table{}, fmt.Errorf("backup: read %s: %w", name, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return table{}, fmt.Errorf("backup: read %s: %w", name, err)
	}
	t := table{Name: name, Columns: cols}
	for rows.Next() {
		cells := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range cells {
			ptrs[i] = &cells[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return table{}, fmt.Errorf("backup: read %s: %w", name, err)
		}
		row := make([]value, len(cols))
		for i, c := range cells {
			if row[i], err = toValue(c); err != nil {
				return table{}, fmt.Errorf("backup: read %s.%s: %w", name, cols[i], err)
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t, rows.Err()
}

// schemaOf is the newest applied step per component in d's migrations
// table.
func schemaOf(d dump) []SchemaRef {
	newest := map[string]int{}
	for _, t := range d.Tables {
		if t.Name != migrationsTable {
			continue
		}
		ci, vi := slices.Index(t.Columns, "component"), slices.Index(t.Columns, "version")
		for _, r := range t.Rows {
			if ci < 0 || vi < 0 || r[ci].S == nil || r[vi].I == nil {
				continue
			}
			newest[*r[ci].S] = max(newest[*r[ci].S], int(*r[vi].I))
		}
	}
	var out []SchemaRef
	for c, v := range newest {
		out = append(out, SchemaRef{Component: c, Version: v})
	}
	slices.SortFunc(out, func(a, b SchemaRef) int { return strings.Compare(a.Component, b.Component) })
	return out
}

func newID(now time.Time) string { return now.UTC().Format("20060102-150405.000") }

// Create backs up the data directory whose metastore is meta and object
// store src into dst, and returns its manifest. The server may be running.
func Create(ctx context.Context, meta *metastore.DB, src, dst objstore.Store) (Manifest, error) {
	for _, prepare := range []func(context.Context, *metastore.DB) error{storage.MigrateMetastore, catalog.MigrateMetastore} {
		if err := prepare(ctx, meta); err != nil {
			return Manifest{}, err
		}
	}
	now := time.Now()
	id := newID(now)
	for {
		if _, err := dst.Stat(ctx, id+"/"+manifestName); errors.Is(err, objstore.ErrNotFound) {
			break
		} else if err != nil {
			return Manifest{}, fmt.Errorf("backup: backup store: %w", err)
		}
		now = now.Add(time.Millisecond)
		id = newID(now)
	}
	var (
		pinned storage.PinnedVersion
		d      dump
	)
	// The snapshot and the pin, in one transaction (see the package doc).
	err := meta.SnapshotTx(ctx, 10, func(tx *metastore.Tx) error {
		d = dump{}
		var err error
		if pinned, err = storage.PinVersion(ctx, tx, id, now); err != nil {
			return err
		}
		names, err := listTables(ctx, tx, tx.Dialect())
		if err != nil {
			return err
		}
		for _, n := range names {
			if n == pinsTable {
				continue
			}
			t, err := readTable(ctx, tx, n)
			if err != nil {
				return err
			}
			d.Tables = append(d.Tables, t)
		}
		return nil
	})
	if err != nil {
		return Manifest{}, fmt.Errorf("backup: snapshot the metastore: %w", err)
	}
	defer func() {
		// Released on success and failure alike; a crash leaves it for
		// ctl backup delete (see the package doc).
		_ = storage.ReleasePin(context.WithoutCancel(ctx), meta, id)
	}()
	m := Manifest{Format: Format, ID: id, Created: now.UTC(), VersionID: pinned.ID, CommittedEpoch: pinned.CommittedEpoch,
		Dialect: meta.Dialect().String(), Schema: schemaOf(d)}
	for _, key := range pinned.Objects {
		if h := copyHook.Load(); h != nil {
			(*h)(key)
		}
		data, err := src.Get(ctx, key)
		if err != nil {
			return Manifest{}, fmt.Errorf("backup: read %s: %w", key, err)
		}
		if err := dst.Put(ctx, id+"/"+key, data); err != nil {
			return Manifest{}, fmt.Errorf("backup: write %s/%s: %w", id, key, err)
		}
		m.Objects = append(m.Objects, Object{Key: key, Size: int64(len(data)), SHA256: sum(data)})
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(d); err != nil {
		return Manifest{}, fmt.Errorf("backup: encode the metastore: %w", err)
	}
	if err := zw.Close(); err != nil {
		return Manifest{}, fmt.Errorf("backup: encode the metastore: %w", err)
	}
	if err := dst.Put(ctx, id+"/"+metastoreName, buf.Bytes()); err != nil {
		return Manifest{}, fmt.Errorf("backup: write %s/%s: %w", id, metastoreName, err)
	}
	m.Metastore = Object{Key: metastoreName, Size: int64(buf.Len()), SHA256: sum(buf.Bytes())}
	mj, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	if err := dst.Put(ctx, id+"/"+manifestName, mj); err != nil {
		return Manifest{}, fmt.Errorf("backup: write %s/%s: %w", id, manifestName, err)
	}
	return m, nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// List returns the complete backups in dst, oldest first.
func List(ctx context.Context, dst objstore.Store) ([]Manifest, error) {
	objs, err := dst.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("backup: list the backup store: %w", err)
	}
	var out []Manifest
	for _, o := range objs {
		id, ok := strings.CutSuffix(o.Key, "/"+manifestName)
		if !ok || strings.Contains(id, "/") {
			continue
		}
		m, err := readManifest(ctx, dst, id)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Manifest) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// ErrNoBackup is returned (wrapped) for an id with no complete backup.
var ErrNoBackup = errors.New("no such backup")

func readManifest(ctx context.Context, dst objstore.Store, id string) (Manifest, error) {
	if id == "" || strings.ContainsAny(id, "/\\") || id == "." || id == ".." {
		return Manifest{}, fmt.Errorf("backup: invalid backup id %q", id)
	}
	data, err := dst.Get(ctx, id+"/"+manifestName)
	if errors.Is(err, objstore.ErrNotFound) {
		return Manifest{}, fmt.Errorf("backup %s: %w (or it is incomplete: it has no manifest)", id, ErrNoBackup)
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("backup %s: read manifest: %w", id, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("backup %s: corrupt manifest: %w", id, err)
	}
	if m.Format > Format {
		return Manifest{}, fmt.Errorf("backup %s has format %d, newer than this runnel reads (%d): restore it with a newer runnel", id, m.Format, Format)
	}
	if m.ID != id {
		return Manifest{}, fmt.Errorf("backup %s: manifest names backup %q", id, m.ID)
	}
	return m, nil
}

// Delete removes backup id from dst: the manifest first, so that a
// deletion cut short leaves an incomplete backup List does not show. It
// also removes the files of a backup that was cut short (no manifest).
func Delete(ctx context.Context, dst objstore.Store, id string) error {
	_, err := readManifest(ctx, dst, id)
	if err != nil && !errors.Is(err, ErrNoBackup) {
		return err
	}
	complete := err == nil
	if err := dst.Delete(ctx, id+"/"+manifestName); err != nil {
		return fmt.Errorf("backup %s: delete: %w", id, err)
	}
	objs, err := dst.List(ctx, id+"/")
	if err != nil {
		return fmt.Errorf("backup %s: delete: %w", id, err)
	}
	if !complete && len(objs) == 0 {
		return fmt.Errorf("backup %s: %w", id, ErrNoBackup)
	}
	for _, o := range objs {
		if err := dst.Delete(ctx, o.Key); err != nil {
			return fmt.Errorf("backup %s: delete %s: %w", id, o.Key, err)
		}
	}
	return nil
}

// getVerified reads one backup file and checks its size and checksum.
func getVerified(ctx context.Context, dst objstore.Store, id string, o Object) ([]byte, error) {
	data, err := dst.Get(ctx, id+"/"+o.Key)
	if err != nil {
		return nil, fmt.Errorf("backup %s: read %s: %w", id, o.Key, err)
	}
	if int64(len(data)) != o.Size || sum(data) != o.SHA256 {
		return nil, fmt.Errorf("backup %s: %s is corrupt (%d bytes, sha256 %s; the manifest says %d bytes, %s)", id, o.Key, len(data), sum(data), o.Size, o.SHA256)
	}
	return data, nil
}

// Restore writes backup id from dst into an empty metastore meta and
// object store objs (see the package doc).
func Restore(ctx context.Context, dst objstore.Store, id string, meta *metastore.DB, objs objstore.Store) (Manifest, error) {
	m, err := readManifest(ctx, dst, id)
	if err != nil {
		return Manifest{}, err
	}
	raw, err := getVerified(ctx, dst, id, m.Metastore)
	if err != nil {
		return Manifest{}, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return Manifest{}, fmt.Errorf("backup %s: metastore dump: %w", id, err)
	}
	var d dump
	if err := json.NewDecoder(io.Reader(zr)).Decode(&d); err != nil {
		return Manifest{}, fmt.Errorf("backup %s: metastore dump: %w", id, err)
	}
	// The schema steps first (refusing a backup newer than this binary).
	plan := map[string][]metastore.Migration{}
	for _, s := range m.Schema {
		steps, ok := components[s.Component]
		if !ok {
			return Manifest{}, fmt.Errorf("backup %s holds metastore component %q, which this runnel does not know: restore it with the runnel that wrote it", id, s.Component)
		}
		all := steps()
		n := slices.IndexFunc(all, func(mg metastore.Migration) bool { return mg.Version == s.Version })
		if n < 0 {
			return Manifest{}, fmt.Errorf("backup %s: metastore component %s is at schema version %d, which this runnel does not have (newest %d): restore it with a newer runnel", id, s.Component, s.Version, all[len(all)-1].Version)
		}
		plan[s.Component] = all[:n+1]
	}
	if err := checkEmpty(ctx, meta, objs, m); err != nil {
		return Manifest{}, fmt.Errorf("restore backup %s: %w", id, err)
	}
	for _, o := range m.Objects {
		data, err := getVerified(ctx, dst, id, o)
		if err != nil {
			return Manifest{}, err
		}
		if err := objs.Put(ctx, o.Key, data); err != nil {
			return Manifest{}, fmt.Errorf("restore backup %s: write %s: %w", id, o.Key, err)
		}
	}
	var comps []string
	for c := range plan {
		comps = append(comps, c)
	}
	slices.Sort(comps)
	for _, c := range comps {
		if err := meta.Migrate(ctx, c, plan[c]); err != nil {
			return Manifest{}, fmt.Errorf("restore backup %s: %w", id, err)
		}
	}
	have, err := listTables(ctx, meta, meta.Dialect())
	if err != nil {
		return Manifest{}, err
	}
	err = meta.Tx(ctx, func(tx *metastore.Tx) error {
		for _, t := range d.Tables {
			if t.Name == migrationsTable || t.Name == pinsTable {
				continue
			}
			if !slices.Contains(have, t.Name) {
				return fmt.Errorf("the backup holds metastore table %s, which its schema steps do not create", t.Name)
			}
			// Rows a migration step inserted (counters) make way for
			// the backup's.
			if _, err := tx.Exec(ctx, `DELETE FROM `+quoteIdent(t.Name)); err != nil {
				return fmt.Errorf("clear %s: %w", t.Name, err)
			}
			cols := make([]string, len(t.Columns))
			marks := make([]string, len(t.Columns))
			for i, c := range t.Columns {
				cols[i] = quoteIdent(c)
				marks[i] = fmt.Sprintf("$%d", i+1)
			}
			ins := `INSERT INTO ` + quoteIdent(t.Name) + ` (` + strings.Join(cols, ", ") + `) VALUES (` + strings.Join(marks, ", ") + `)`
			for _, r := range t.Rows {
				args := make([]any, len(r))
				for i, v := range r {
					args[i] = v.arg()
				}
				if _, err := tx.Exec(ctx, ins, args...); err != nil {
					return fmt.Errorf("write %s: %w", t.Name, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return Manifest{}, fmt.Errorf("restore backup %s: %w", id, err)
	}
	return m, nil
}

// checkEmpty refuses a target that holds data: a catalog object, a
// committed version, or an SST the backup does not name. A target an
// interrupted restore left behind (schema steps applied, SSTs of this
// backup copied, no rows) is accepted.
func checkEmpty(ctx context.Context, meta *metastore.DB, objs objstore.Store, m Manifest) error {
	have, err := listTables(ctx, meta, meta.Dialect())
	if err != nil {
		return err
	}
	for _, probe := range []struct{ table, query, what string }{
		{"catalog_object", `SELECT COUNT(*) FROM catalog_object`, "catalog objects"},
		{"storage_counters", `SELECT COUNT(*) FROM storage_counters WHERE name = 'version_id' AND value > 0`, "a committed storage version"},
	} {
		if !slices.Contains(have, probe.table) {
			continue
		}
		var n int64
		if err := meta.QueryRow(ctx, probe.query).Scan(&n); err != nil {
			return fmt.Errorf("inspect the target metastore: %w", err)
		}
		if n > 0 {
			return fmt.Errorf("the target metastore is not empty (it holds %s); restore needs an empty data directory and metastore", probe.what)
		}
	}
	listed, err := objs.List(ctx, "sst/")
	if err != nil {
		return fmt.Errorf("list the target object store: %w", err)
	}
	ours := map[string]bool{}
	for _, o := range m.Objects {
		ours[o.Key] = true
	}
	for _, o := range listed {
		if !ours[o.Key] {
			return fmt.Errorf("the target object store is not empty (it holds %s); restore needs an empty data directory and object store", o.Key)
		}
	}
	return nil
}

// copyHook, when set, is called before Create copies each pinned object,
// with its key: tests run compaction and GC there, while the copy is
// under way (SetCopyHook).
var copyHook atomic.Pointer[func(key string)]

// SetCopyHook installs fn (see copyHook) and returns a function that
// removes it. Unset, it costs one atomic load per object.
func SetCopyHook(fn func(key string)) (remove func()) {
	copyHook.Store(&fn)
	return func() { copyHook.CompareAndSwap(&fn, nil) }
}
