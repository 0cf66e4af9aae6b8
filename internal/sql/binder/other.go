package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// bindOther binds statements other than queries (DDL, DML, utility).
func (b *Binder) bindOther(n *pg.Node) (Statement, bool, error) {
	var s Statement
	var err error
	switch {
	case n.GetCreateStmt() != nil:
		s, err = b.bindCreateTable(n.GetCreateStmt())
	case n.GetDropStmt() != nil && n.GetDropStmt().RemoveType == pg.ObjectType_OBJECT_FUNCTION:
		s, err = b.bindDropFunction(n.GetDropStmt())
	case n.GetDropStmt() != nil:
		s, err = b.bindDrop(n.GetDropStmt())
	case n.GetIndexStmt() != nil:
		s, err = b.bindCreateIndex(n.GetIndexStmt()) // index.go
	case n.GetCreateFunctionStmt() != nil:
		s, err = b.bindCreateFunction(n.GetCreateFunctionStmt())
	case n.GetDropdbStmt() != nil:
		d := n.GetDropdbStmt()
		s = &Drop{Type: ObjDatabase, Names: []QualName{{Name: d.Dbname}}, IfExists: d.MissingOk}
	case n.GetDropRoleStmt() != nil:
		d := n.GetDropRoleStmt()
		dr := &Drop{Type: ObjUser, IfExists: d.MissingOk}
		for _, r := range d.Roles {
			dr.Names = append(dr.Names, QualName{Name: r.GetRoleSpec().Rolename})
		}
		s = dr
	case n.GetViewStmt() != nil:
		v := n.GetViewStmt()
		s, err = b.bindCreateView(v.View, v.Aliases, v.Query, false, false, v.Replace)
	case n.GetCreateTableAsStmt() != nil:
		c := n.GetCreateTableAsStmt()
		if c.Objtype == pg.ObjectType_OBJECT_TABLE {
			s, err = b.bindCreateTableAs(c)
			break
		}
		if c.Objtype != pg.ObjectType_OBJECT_MATVIEW {
			return nil, true, unsupported("CREATE TABLE AS is not supported")
		}
		s, err = b.bindCreateView(c.Into.Rel, c.Into.ColNames, c.Query, true, c.IfNotExists, false)
	case n.GetCreatedbStmt() != nil:
		s = &CreateDatabase{Name: n.GetCreatedbStmt().Dbname}
	case n.GetCreateSchemaStmt() != nil:
		c := n.GetCreateSchemaStmt()
		if len(c.SchemaElts) > 0 {
			return nil, true, unsupported("CREATE SCHEMA with elements is not supported")
		}
		name := c.Schemaname
		if name == "" && c.Authrole != nil {
			name = c.Authrole.Rolename
		}
		s = &CreateSchema{Name: name, IfNotExists: c.IfNotExists}
	case n.GetCreateRoleStmt() != nil:
		c := n.GetCreateRoleStmt()
		s, err = b.bindRole(c.Role, c.Options, false)
		if u, ok := s.(*CreateUser); ok && err == nil && c.StmtType == pg.RoleStmtType_ROLESTMT_USER {
			if _, set := u.Flags["canlogin"]; !set {
				u.Flags["canlogin"] = true
			}
		}
	case n.GetAlterRoleStmt() != nil:
		c := n.GetAlterRoleStmt()
		s, err = b.bindRole(c.Role.Rolename, c.Options, true)
	case n.GetVariableSetStmt() != nil:
		s, err = b.bindSet(n.GetVariableSetStmt())
	case n.GetVariableShowStmt() != nil:
		s = &ShowVar{Name: n.GetVariableShowStmt().Name}
	case n.GetTransactionStmt() != nil:
		switch n.GetTransactionStmt().Kind {
		case pg.TransactionStmtKind_TRANS_STMT_BEGIN, pg.TransactionStmtKind_TRANS_STMT_START:
			s = &Transaction{Kind: TxnBegin}
		case pg.TransactionStmtKind_TRANS_STMT_COMMIT:
			s = &Transaction{Kind: TxnCommit}
		case pg.TransactionStmtKind_TRANS_STMT_ROLLBACK:
			s = &Transaction{Kind: TxnRollback}
		case pg.TransactionStmtKind_TRANS_STMT_SAVEPOINT, pg.TransactionStmtKind_TRANS_STMT_RELEASE,
			pg.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO:
			s = &Transaction{Kind: TxnSavepoint} // run by the session (frontend/txn.go)
		default:
			return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "two-phase commit is not supported")
		}
	case n.GetInsertStmt() != nil:
		s, err = b.bindInsert(n.GetInsertStmt())
	case n.GetUpdateStmt() != nil:
		s, err = b.bindUpdate(n.GetUpdateStmt())
	case n.GetDeleteStmt() != nil:
		s, err = b.bindDelete(n.GetDeleteStmt())
	case n.GetCopyStmt() != nil:
		s, err = b.bindCopy(n.GetCopyStmt())
	default:
		return nil, false, nil
	}
	return s, true, err
}
