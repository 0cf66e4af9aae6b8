package streamplan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/stream/state"
)

// StateLayout describes the state tables of a plan whose state tables
// are assigned (AssignStateTables): for each, in plan order, the operator
// that owns it and its schema, and a fingerprint over all of them. Only
// what decides how stored state is read goes in: stateless operators and
// expressions can change between versions without making stored state
// unreadable, a state table's owner, types or key cannot (issue 13 item
// 7: a job whose stored layout differs is refused, never bound by
// position).
func StateLayout(root *Node) *catalog.StateLayout {
	l := &catalog.StateLayout{}
	walk(root, func(n *Node) {
		for i, id := range n.StateTables {
			var sc state.Schema
			if i < len(n.stateSchemas) {
				sc = n.stateSchemas[i]
			}
			t := catalog.StateTableLayout{ID: id, Executor: n.Op.String(), Key: slices.Clone(sc.PK), DistKey: slices.Clone(sc.DistKey)}
			for _, d := range sc.Desc {
				if d {
					t.Desc = slices.Clone(sc.Desc)
					break
				}
			}
			for _, ty := range sc.Types {
				t.Types = append(t.Types, ty.String())
			}
			l.Tables = append(l.Tables, t)
		}
	})
	l.Fingerprint = LayoutFingerprint(l.Tables)
	return l
}

// LayoutFingerprint hashes state-table layouts (ids excluded: a rebuild
// reuses the job's ids in order, so they cannot differ).
func LayoutFingerprint(tables []catalog.StateTableLayout) string {
	h := sha256.New()
	for _, t := range tables {
		fmt.Fprintf(h, "%s|%s|%v|%v|%v;", t.Executor, strings.Join(t.Types, ","), t.Key, t.Desc, t.DistKey)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// LayoutDiff explains how a planned layout differs from a stored one
// ("" when they are the same).
func LayoutDiff(stored, planned *catalog.StateLayout) string {
	if stored.Fingerprint == planned.Fingerprint {
		return ""
	}
	if len(stored.Tables) != len(planned.Tables) {
		return fmt.Sprintf("it was created with %d state tables, the plan now has %d", len(stored.Tables), len(planned.Tables))
	}
	for i := range stored.Tables {
		s, p := stored.Tables[i], planned.Tables[i]
		if LayoutFingerprint([]catalog.StateTableLayout{s}) != LayoutFingerprint([]catalog.StateTableLayout{p}) {
			return fmt.Sprintf("state table %d was created for %s (types %s, key %v), the plan now needs %s (types %s, key %v)",
				s.ID, s.Executor, strings.Join(s.Types, ", "), s.Key, p.Executor, strings.Join(p.Types, ", "), p.Key)
		}
	}
	return fmt.Sprintf("the layout fingerprint was %s, the plan's is %s", stored.Fingerprint, planned.Fingerprint)
}
