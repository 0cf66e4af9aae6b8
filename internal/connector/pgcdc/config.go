package pgcdc

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// Connector is the name a source or table gives in WITH (connector = ...).
const Connector = "postgres-cdc"

// DefaultPublication is the publication used when publication.name is not
// given (RisingWave's default).
const DefaultPublication = "rw_publication"

// Config is a CDC connection: RisingWave's postgres-cdc WITH options.
type Config struct {
	Host     string // hostname
	Port     int    // port (5432)
	User     string // username
	Password string // password
	Database string // database.name
	Schema   string // schema.name (public)
	// Table is table.name (single-table form) or the table of
	// CREATE TABLE ... FROM source TABLE 'schema.table'.
	Table string
	// Slot is slot.name: the replication slot of the table.
	Slot string
	// Publication is publication.name; CreatePublication is
	// publication.create.enable (true): create it, or add the table to it,
	// when missing.
	Publication       string
	CreatePublication bool
	// SSLMode is ssl.mode as libpq's sslmode (prefer by default);
	// SSLRootCert is ssl.root.cert, the path of the PEM CA file for
	// verify-ca and verify-full.
	SSLMode, SSLRootCert string
}

// The option keys.
const (
	OptHost              = "hostname"
	OptPort              = "port"
	OptUser              = "username"
	OptPassword          = "password"
	OptDatabase          = "database.name"
	OptSchema            = "schema.name"
	OptTable             = "table.name"
	OptSlot              = "slot.name"
	OptPublication       = "publication.name"
	OptCreatePublication = "publication.create.enable"
	OptSSLMode           = "ssl.mode"
	OptSSLRootCert       = "ssl.root.cert"
)

// sslModes maps RisingWave's ssl.mode values (and libpq's own names) to
// libpq's sslmode.
var sslModes = map[string]string{
	"disabled": "disable", "disable": "disable",
	"preferred": "prefer", "prefer": "prefer",
	"required": "require", "require": "require",
	"verify-ca": "verify-ca", "verify_ca": "verify-ca",
	"verify-full": "verify-full", "verify_full": "verify-full", "verify-identity": "verify-full",
}

// slotNameRE is PostgreSQL's rule for replication slot names.
var slotNameRE = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

func badOption(key, format string, args ...any) error {
	return sqlerr.Errorf(sqlerr.InvalidParameterValue, "postgres-cdc option %s: %s", key, fmt.Sprintf(format, args...))
}

// ParseSourceOptions checks the connection options of CREATE SOURCE ...
// WITH (connector = 'postgres-cdc', ...): everything but the table.
func ParseSourceOptions(opts map[string]string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(opts[k]) }
	c := Config{
		Host: get(OptHost), User: get(OptUser), Password: opts[OptPassword],
		Database: get(OptDatabase), Schema: get(OptSchema), Table: get(OptTable),
		Slot: get(OptSlot), Publication: get(OptPublication), CreatePublication: true,
	}
	for _, k := range []string{OptHost, OptUser, OptDatabase} {
		if get(k) == "" {
			return Config{}, badOption(k, "required")
		}
	}
	c.Port = 5432
	if p := get(OptPort); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return Config{}, badOption(OptPort, "%q is not a port number", p)
		}
		c.Port = n
	}
	if c.Schema == "" {
		c.Schema = "public"
	}
	if c.Publication == "" {
		c.Publication = DefaultPublication
	}
	if c.Slot != "" && !slotNameRE.MatchString(c.Slot) {
		return Config{}, badOption(OptSlot, "%q: a slot name is 1-63 lower-case letters, digits and underscores", c.Slot)
	}
	c.SSLMode = "prefer"
	if v := strings.ToLower(get(OptSSLMode)); v != "" {
		m, ok := sslModes[v]
		if !ok {
			return Config{}, badOption(OptSSLMode, "%q is not disabled, preferred, required, verify-ca or verify-full", opts[OptSSLMode])
		}
		c.SSLMode = m
	}
	c.SSLRootCert = get(OptSSLRootCert)
	if c.SSLRootCert != "" && !strings.HasPrefix(c.SSLMode, "verify") {
		return Config{}, badOption(OptSSLRootCert, "is used by ssl.mode = 'verify-ca' or 'verify-full' only (it is %s)", c.SSLMode)
	}
	if v := get(OptCreatePublication); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, badOption(OptCreatePublication, "%q is not a boolean", v)
		}
		c.CreatePublication = b
	}
	return c, nil
}

// ParseTableOptions checks the options of a CDC table: the source's plus
// table.name (schema.name, or a "schema.table" name, names its schema).
func ParseTableOptions(opts map[string]string) (Config, error) {
	c, err := ParseSourceOptions(opts)
	if err != nil {
		return Config{}, err
	}
	if c.Table == "" {
		return Config{}, badOption(OptTable, "required")
	}
	if s, t, ok := strings.Cut(c.Table, "."); ok {
		if s == "" || t == "" {
			return Config{}, badOption(OptTable, "%q is not a table name", c.Table)
		}
		c.Schema, c.Table = s, t
	}
	return c, nil
}

// QualifiedTable is the upstream table as schema.table, quoted for SQL.
func (c Config) QualifiedTable() string {
	return quoteIdent(c.Schema) + "." + quoteIdent(c.Table)
}

// TableName is schema.table, for messages.
func (c Config) TableName() string { return c.Schema + "." + c.Table }

// connURL is the connection URL; replication adds replication=database.
// The session settings fix the text format of every value PostgreSQL
// sends (snapshot rows and pgoutput alike), so values parse the same way
// whatever the server's defaults are.
func (c Config) connURL(replication bool) string {
	u := url.URL{Scheme: "postgres", Host: net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), Path: "/" + c.Database}
	if c.Password != "" {
		u.User = url.UserPassword(c.User, c.Password)
	} else {
		u.User = url.User(c.User)
	}
	q := url.Values{}
	mode := c.SSLMode
	if mode == "" {
		mode = "prefer"
	}
	q.Set("sslmode", mode)
	if c.SSLRootCert != "" {
		q.Set("sslrootcert", c.SSLRootCert)
	}
	q.Set("connect_timeout", "10")
	q.Set("application_name", "runnel-cdc")
	q.Set("DateStyle", "ISO")
	q.Set("TimeZone", "UTC")
	q.Set("IntervalStyle", "postgres")
	q.Set("extra_float_digits", "3")
	q.Set("bytea_output", "hex")
	if replication {
		q.Set("replication", "database")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Redacted is the connection as host:port/database for messages (no
// password).
func (c Config) Redacted() string {
	return fmt.Sprintf("%s@%s/%s", c.User, net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), c.Database)
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteLiteral(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }
