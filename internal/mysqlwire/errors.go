package mysqlwire

import (
	"errors"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// MySQL error numbers this package sends (mysqld_error.h).
const (
	erAccessDenied       = 1045 // 28000
	erBadDB              = 1049 // 42000
	erUnknownCommand     = 1047 // 08S01
	erNetPacketTooLarge  = 1153 // 08S01
	erNetReadError       = 1158 // 08S01
	erUnknownError       = 1105 // HY000
	erParseError         = 1064 // 42000
	erUnknownSystemVar   = 1193 // HY000
	erUnknownStmtHandler = 1243 // HY000
	erWrongParamCount    = 1210 // HY000
	erNotSupportedYet    = 1235 // 42000
	erQueryInterrupted   = 1317 // 70100
	erServerShutdown     = 1053 // 08S01
)

// mysqlCodes maps a PostgreSQL SQLSTATE to the MySQL error number and
// SQLSTATE that a MySQL server reports for the same condition, so that
// clients and ORMs that test error numbers (1062 duplicate key, 1146 no such
// table) work. A SQLSTATE with no MySQL counterpart is sent as itself with
// error number 1105 (ER_UNKNOWN_ERROR): PostgreSQL's codes are SQL-standard
// classes, so the class still tells the client what happened.
var mysqlCodes = map[string]struct {
	code  uint16
	state string
}{
	sqlerr.SyntaxError:               {erParseError, "42000"},
	sqlerr.UndefinedTable:            {1146, "42S02"}, // ER_NO_SUCH_TABLE
	sqlerr.UndefinedColumn:           {1054, "42S22"}, // ER_BAD_FIELD_ERROR
	sqlerr.DuplicateTable:            {1050, "42S01"}, // ER_TABLE_EXISTS_ERROR
	sqlerr.DuplicateColumn:           {1060, "42S21"}, // ER_DUP_FIELDNAME
	sqlerr.DuplicateSchema:           {1007, "HY000"}, // ER_DB_CREATE_EXISTS
	sqlerr.InvalidSchemaName:         {erBadDB, "42000"},
	sqlerr.InvalidCatalogName:        {erBadDB, "42000"},
	sqlerr.UniqueViolation:           {1062, "23000"}, // ER_DUP_ENTRY
	sqlerr.NotNullViolation:          {1048, "23000"}, // ER_BAD_NULL_ERROR
	sqlerr.DivisionByZero:            {1365, "22012"}, // ER_DIVISION_BY_ZERO
	sqlerr.NumericValueOutOfRange:    {1264, "22003"}, // ER_WARN_DATA_OUT_OF_RANGE
	sqlerr.StringDataRightTruncation: {1406, "22001"}, // ER_DATA_TOO_LONG
	sqlerr.UndefinedFunction:         {1305, "42000"}, // ER_SP_DOES_NOT_EXIST
	sqlerr.AmbiguousColumn:           {1052, "23000"}, // ER_NON_UNIQ_ERROR
	sqlerr.InvalidAuthorizationSpec:  {erAccessDenied, "28000"},
	sqlerr.InvalidPassword:           {erAccessDenied, "28000"},
	sqlerr.InsufficientPrivilege:     {1142, "42000"}, // ER_TABLEACCESS_DENIED_ERROR
	sqlerr.FeatureNotSupported:       {erNotSupportedYet, "42000"},
	sqlerr.QueryCanceled:             {erQueryInterrupted, "70100"},
	sqlerr.AdminShutdown:             {erServerShutdown, "08S01"},
	sqlerr.SerializationFailure:      {1213, "40001"}, // ER_LOCK_DEADLOCK
}

// mysqlError is an error already in MySQL's terms.
type mysqlError struct {
	code    uint16
	state   string
	message string
}

func (e *mysqlError) Error() string { return e.message }

func newError(code uint16, state, message string) *mysqlError {
	return &mysqlError{code: code, state: state, message: message}
}

// toMySQL converts any error to an ERR packet's fields. A *sqlerr.Error
// keeps its message (with its detail appended, as the MySQL protocol has no
// detail field); any other error is an internal one (1105, XX000).
func toMySQL(err error) *mysqlError {
	var me *mysqlError
	if errors.As(err, &me) {
		return me
	}
	se := sqlerr.From(err)
	if se == nil {
		return newError(erUnknownError, sqlerr.InternalError, err.Error())
	}
	msg := se.Message
	if se.Detail != "" {
		msg += " (" + se.Detail + ")"
	}
	if m, ok := mysqlCodes[se.Code]; ok {
		return newError(m.code, m.state, msg)
	}
	state := se.Code
	if len(state) != 5 {
		state = "HY000"
	}
	return newError(erUnknownError, state, msg)
}

// appendErr builds an ERR packet (protocol 4.1: with the SQLSTATE marker).
func appendErr(b []byte, e *mysqlError) []byte {
	b = append(b, 0xff, byte(e.code), byte(e.code>>8), '#')
	state := e.state
	if len(state) != 5 {
		state = "HY000"
	}
	b = append(b, state...)
	return append(b, e.message...)
}
