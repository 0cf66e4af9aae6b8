package catalog

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/types"
)

func openTestCatalog(t *testing.T, path string) (*Catalog, *metastore.DB) {
	t.Helper()
	ctx := context.Background()
	db, err := metastore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	return c, db
}

// The catalog must come back identical after a reopen, and ids must never
// be reused after a drop.
func TestCatalogPersistsAndNeverReusesIDs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	c, db := openTestCatalog(t, path)
	dev, err := c.DatabaseByName(DefaultDatabase)
	if err != nil {
		t.Fatal(err)
	}
	public, err := c.SchemaByName(dev.ID, DefaultSchema)
	if err != nil {
		t.Fatal(err)
	}
	rel := &Relation{DatabaseID: dev.ID, SchemaID: public.ID, Name: "t", Kind: KindTable,
		Columns: []Column{{Name: "a", Type: types.Int32, NotNull: true}, {Name: "b", Type: types.Varchar}},
		PK:      []int{0}}
	tables, err := c.CreateRelation(ctx, rel, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || rel.StateTable != tables[0] {
		t.Fatalf("state tables = %v, rel.StateTable = %d", tables, rel.StateTable)
	}
	firstID, firstTable := rel.ID, rel.StateTable
	if err := c.DropObject(ctx, rel.ID); err != nil {
		t.Fatal(err)
	}
	rel2 := &Relation{DatabaseID: dev.ID, SchemaID: public.ID, Name: "t", Kind: KindTable,
		Columns: []Column{{Name: "a", Type: types.Int64}}, PK: []int{0}}
	if _, err := c.CreateRelation(ctx, rel2, 1); err != nil {
		t.Fatal(err)
	}
	if rel2.ID <= firstID || rel2.StateTable <= firstTable {
		t.Fatalf("ids reused: relation %d after %d, table %d after %d", rel2.ID, firstID, rel2.StateTable, firstTable)
	}
	db.Close()

	c2, db2 := openTestCatalog(t, path)
	defer db2.Close()
	got, err := c2.RelationByName(public.ID, "t")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != rel2.ID || got.Columns[0].Type != types.Int64 || got.StateTable != rel2.StateTable {
		t.Fatalf("reloaded relation = %+v; want %+v", got, rel2)
	}
	if u, err := c2.UserByName(DefaultUser); err != nil || !u.Superuser {
		t.Fatalf("root user = %+v, %v", u, err)
	}
	if n := len(c2.Databases()); n != 1 {
		t.Fatalf("bootstrap ran twice: %d databases", n)
	}
}
