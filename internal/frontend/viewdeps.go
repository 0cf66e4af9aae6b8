package frontend

import (
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// The dependency graph between relations (catalog.Relation.DependsOn) is
// user-shaped, so nothing walks it by recursion: a cycle, or a very long
// chain of views, must not be able to overflow the Go stack, a fatal error
// no recover() catches (I9). Cycles are refused where they would be made
// (CREATE OR REPLACE VIEW, the only statement that changes what an
// existing relation depends on), and the walks below keep a visited set
// anyway for catalogs written before that check.

// checkNoCycle refuses to make view (an existing relation being replaced)
// depend on deps when one of them already depends on view, directly or
// through other relations: PostgreSQL's 42P17.
func (s *Frontend) checkNoCycle(view *catalog.Relation, deps []catalog.ObjectID) error {
	seen := map[catalog.ObjectID]bool{}
	todo := append([]catalog.ObjectID(nil), deps...)
	for len(todo) > 0 {
		id := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if id == view.ID {
			return sqlerr.Errorf(sqlerr.InvalidObjectDefinition, "infinite recursion detected in rules for relation \"%s\"", view.Name)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		if r, ok := s.catalog.Relation(id); ok {
			todo = append(todo, r.DependsOn...)
		}
	}
	return nil
}
