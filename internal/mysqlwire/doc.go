// Package mysqlwire is Runnel's MySQL wire-protocol server (--mysql-listen,
// off unless set; GreptimeDB's port is 4002). It serves the same sessions,
// catalog and SQL engine as pgwire, through the same pgwire.Engine
// interface: a MySQL connection is an engine session whose MySQL
// "databases" are the schemas of one Runnel database (Config.Database,
// default dev), as GreptimeDB maps them.
//
// The protocol layer is written here by hand: the module the design names
// (github.com/go-mysql-org/go-mysql's server package) is not served by this
// project's module proxy, and the one MySQL server library that is
// (dolthub/go-mysql-server) is a whole SQL engine, not approved for use.
// What is implemented is the subset real clients use, from MySQL's
// client/server protocol documentation:
//
//   - Handshake v10 with protocol 4.1, no TLS. Authentication follows
//     pgwire's rules (Config.AuthTrustLoopback, AuthTrustAll) for users
//     without a password; a user with one must give it in clear text
//     (mysql_clear_password, asked for with an AuthSwitchRequest) and it is
//     checked against the stored SCRAM verifier; that is allowed only from
//     loopback addresses, since nothing encrypts it (elsewhere: 1045 and a
//     hint to use pgwire). mysql_native_password cannot be checked against
//     a SCRAM verifier.
//   - The text protocol (COM_QUERY, several statements per query with
//     SERVER_MORE_RESULTS_EXISTS), COM_INIT_DB, COM_PING, COM_FIELD_LIST
//     (an empty list), COM_SET_OPTION, COM_RESET_CONNECTION, and prepared
//     statements (COM_STMT_PREPARE / EXECUTE / SEND_LONG_DATA / RESET /
//     CLOSE) with the binary row format.
//   - Results: column types as columnOf maps them; errors as ERR packets
//     with a MySQL error number and SQLSTATE (errors.go maps PostgreSQL's
//     SQLSTATEs to MySQL's pairs where MySQL has one, else 1105 and the
//     SQLSTATE itself).
//
// Dialect: translate.go rewrites MySQL's tokens into PostgreSQL's
// (backquoted identifiers, double-quoted and backslash-escaped strings,
// # comments, ? placeholders, LIMIT a, b); statements.go answers the
// statements MySQL clients send that the engine has no syntax for (SHOW
// DATABASES/TABLES/COLUMNS/CREATE TABLE/VARIABLES, USE, SELECT @@var, SET
// NAMES). Everything else is the engine's PostgreSQL-flavoured SQL.
//
// Threading: one goroutine per connection reads a command, answers it and
// reads the next; Session and Statement methods of a connection are never
// called concurrently. Shutdown cancels running statements through their
// context (cause 57P01) and wakes idle reads.
//
// Invariants: like pgwire, this package guards I9 at the protocol edge —
// every read is bounds-checked (reader), a command is bounded by
// MaxPacketSize, prepared statements per connection by maxPrepared, and a
// malformed packet ends only its own connection with an ERR packet; a
// panic on a connection goroutine is recovered and ends that connection.
// It imports pgwire for the Engine interface only and must not import sql,
// meta, stream or storage.
package mysqlwire
