package frontend

import (
	"context"
	"errors"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// engine adapts the server to pgwire.Engine.
type engine struct{ s *Frontend }

func (e *engine) UserAuth(ctx context.Context, user string) (pgwire.AuthInfo, error) {
	u, err := e.s.catalog.UserByName(user)
	if errors.Is(err, catalog.ErrNotFound) {
		return pgwire.AuthInfo{}, sqlerr.Errorf(sqlerr.InvalidAuthorizationSpec, "role %q does not exist", user)
	}
	if err != nil {
		return pgwire.AuthInfo{}, err
	}
	if !u.CanLogin {
		return pgwire.AuthInfo{}, sqlerr.Errorf(sqlerr.InvalidAuthorizationSpec, "role %q is not permitted to log in", user)
	}
	return pgwire.AuthInfo{SCRAMVerifier: u.Password, Superuser: u.Superuser}, nil
}

func (e *engine) NewSession(ctx context.Context, params pgwire.StartupParams, client pgwire.ClientConn) (pgwire.Session, error) {
	db, err := e.s.catalog.DatabaseByName(params.Database)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, sqlerr.Errorf(sqlerr.InvalidCatalogName, "database %q does not exist", params.Database)
	}
	if err != nil {
		return nil, err
	}
	u, err := e.s.catalog.UserByName(params.User)
	if err != nil {
		return nil, sqlerr.Errorf(sqlerr.InvalidAuthorizationSpec, "role %q does not exist", params.User)
	}
	return newSession(e.s, db, u, params, client), nil
}
