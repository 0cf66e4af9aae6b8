package catalog

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/metastore"
)

// System parameters: cluster-wide settings changed with ALTER SYSTEM and
// kept in the metadata store (table catalog_system_param), so that they
// survive restarts. The catalog stores names and text values; the server
// defines which names exist and validates values.

func (c *Catalog) ensureSystemParams(ctx context.Context) error {
	_, err := c.db.Exec(ctx, `CREATE TABLE IF NOT EXISTS catalog_system_param (name TEXT PRIMARY KEY, value TEXT NOT NULL)`)
	if err != nil {
		return fmt.Errorf("catalog: create system parameter table: %w", err)
	}
	return nil
}

// SystemParam returns a system parameter's stored value.
func (c *Catalog) SystemParam(ctx context.Context, name string) (string, bool, error) {
	if err := c.ensureSystemParams(ctx); err != nil {
		return "", false, err
	}
	rows, err := c.db.Query(ctx, `SELECT value FROM catalog_system_param WHERE name = $1`, name)
	if err != nil {
		return "", false, fmt.Errorf("catalog: read system parameter %s: %w", name, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return "", false, rows.Err()
	}
	var v string
	if err := rows.Scan(&v); err != nil {
		return "", false, fmt.Errorf("catalog: read system parameter %s: %w", name, err)
	}
	return v, true, nil
}

// SetSystemParam stores a system parameter (reset: delete it, so that the
// default applies).
func (c *Catalog) SetSystemParam(ctx context.Context, name, value string, reset bool) error {
	if err := c.ensureSystemParams(ctx); err != nil {
		return err
	}
	err := c.db.Tx(ctx, func(tx *metastore.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM catalog_system_param WHERE name = $1`, name); err != nil {
			return err
		}
		if reset {
			return nil
		}
		_, err := tx.Exec(ctx, `INSERT INTO catalog_system_param (name, value) VALUES ($1, $2)`, name, value)
		return err
	})
	if err != nil {
		return fmt.Errorf("catalog: set system parameter %s: %w", name, err)
	}
	return nil
}
