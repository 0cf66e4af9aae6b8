package frontend

import (
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sql/binder"
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
