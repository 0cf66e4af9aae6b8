package server

import (
	"errors"
	"fmt"
	"net"

	"github.com/runneldb/runnel/internal/mysqlwire"
)

// startMySQL listens on cfg.MySQLListen ("" disables the listener) and
// serves the MySQL protocol with the frontend's engine, the one pgwire
// serves.
func (s *Server) startMySQL() error {
	if s.cfg.MySQLListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.MySQLListen)
	if err != nil {
		return fmt.Errorf("listen on %s (--mysql-listen): %w", s.cfg.MySQLListen, err)
	}
	mcfg := mysqlwire.DefaultConfig()
	mcfg.Logger = s.log
	s.mysql = mysqlwire.NewServer(mcfg, s.fe.Engine())
	s.mysqlAddr = ln.Addr().String()
	go func() {
		if err := s.mysql.Serve(ln); err != nil && !errors.Is(err, mysqlwire.ErrServerClosed) {
			s.log.Error("mysql listener stopped", "err", err)
		}
	}()
	s.log.Info("mysql listener ready", "mysql_listen", s.mysqlAddr)
	return nil
}

// MySQLAddr is the MySQL listener's address ("" when disabled).
func (s *Server) MySQLAddr() string { return s.mysqlAddr }
