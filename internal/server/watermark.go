package server

import (
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/stream/exec"
)

// catalogWatermark is the catalog form of a CREATE SOURCE / CREATE TABLE
// WATERMARK FOR clause (nil when absent). The binder has checked the
// column and bound the expression; the catalog keeps its text, which is
// bound again wherever it is used, as view definitions are.
func catalogWatermark(ct *binder.CreateTable) *catalog.Watermark {
	if ct.Watermark == nil {
		return nil
	}
	return &catalog.Watermark{Column: ct.Watermark.Column, Expr: ct.Watermark.Text}
}

// tableWatermark makes a table's actor generate the watermarks of its
// WATERMARK FOR clause and drop late changes (exec.TableExecutor's
// SetWatermark); nothing when the table has none.
func (s *Server) tableWatermark(ex *exec.TableExecutor, rel *catalog.Relation) error {
	if rel.Watermark == nil {
		return nil
	}
	e, err := binder.BindWatermark(rel)
	if err != nil {
		return err
	}
	ex.SetWatermark(exec.NewWatermarkGen("table "+rel.Name, rel.Watermark.Column, e, s.log))
	return nil
}
