package sqlerr

import (
	"errors"
	"fmt"
)

// SQLSTATE codes Runnel reports (PostgreSQL Appendix A names).
const (
	SuccessfulCompletion          = "00000"
	ConnectionException           = "08000"
	ProtocolViolation             = "08P01"
	FeatureNotSupported           = "0A000"
	CardinalityViolation          = "21000"
	DataException                 = "22000"
	StringDataRightTruncation     = "22001"
	NumericValueOutOfRange        = "22003"
	NullValueNotAllowed           = "22004"
	InvalidDatetimeFormat         = "22007"
	DatetimeFieldOverflow         = "22008"
	InvalidTimeZoneDisplacement   = "22009"
	DivisionByZero                = "22012"
	IntervalFieldOverflow         = "22015"
	InvalidParameterValue         = "22023"
	InvalidEscapeSequence         = "22025"
	CharacterNotInRepertoire      = "22021"
	InvalidBinaryRepresentation   = "22P03"
	InvalidTextRepresentation     = "22P02"
	UntranslatableCharacter       = "22P05"
	InvalidJSONText               = "22032"
	IntegrityConstraintViolation  = "23000"
	NotNullViolation              = "23502"
	ForeignKeyViolation           = "23503"
	UniqueViolation               = "23505"
	CheckViolation                = "23514"
	InvalidTransactionState       = "25000"
	ActiveSQLTransaction          = "25001"
	ReadOnlySQLTransaction        = "25006"
	InFailedSQLTransaction        = "25P02"
	NoActiveSQLTransaction        = "25P01"
	InvalidSavepointSpecification = "3B001"
	InvalidSQLStatementName       = "26000"
	InvalidAuthorizationSpec      = "28000"
	InvalidPassword               = "28P01"
	DependentObjectsStillExist    = "2BP01"
	InvalidCursorName             = "34000"
	InvalidCatalogName            = "3D000"
	InvalidSchemaName             = "3F000"
	SerializationFailure          = "40001"
	SyntaxError                   = "42601"
	InsufficientPrivilege         = "42501"
	GroupingError                 = "42803"
	DatatypeMismatch              = "42804"
	WrongObjectType               = "42809"
	UndefinedColumn               = "42703"
	UndefinedFunction             = "42883"
	UndefinedTable                = "42P01"
	UndefinedParameter            = "42P02"
	UndefinedObject               = "42704"
	DuplicateColumn               = "42701"
	DuplicateDatabase             = "42P04"
	DuplicateFunction             = "42723"
	DuplicateSchema               = "42P06"
	DuplicateTable                = "42P07"
	DuplicateObject               = "42710"
	AmbiguousColumn               = "42702"
	AmbiguousFunction             = "42725"
	InvalidFunctionDefinition     = "42P13"
	IndeterminateDatatype         = "42P18"
	InvalidColumnReference        = "42P10"
	InvalidTableDefinition        = "42P16"
	InvalidObjectDefinition       = "42P17"
	WindowingError                = "42P20"
	DiskFull                      = "53100"
	OutOfMemory                   = "53200"
	ProgramLimitExceeded          = "54000"
	StatementTooComplex           = "54001"
	TooManyColumns                = "54011"
	TooManyArguments              = "54023"
	ObjectNotInPrerequisiteState  = "55000"
	ObjectInUse                   = "55006"
	QueryCanceled                 = "57014"
	AdminShutdown                 = "57P01"
	CannotConnectNow              = "57P03"
	InternalError                 = "XX000"
	DataCorrupted                 = "XX001"
)

// Error is a user-facing SQL error.
type Error struct {
	Code    string // SQLSTATE, five characters
	Message string // primary message, PostgreSQL style: lower case, no period
	Detail  string // optional
	Hint    string // optional
	// Position is the 1-based character offset into the query text that the
	// error refers to, or 0 when unknown.
	Position int
	// SchemaName, TableName and ConstraintName name the object an
	// integrity error is about (PostgreSQL's error fields s, t and n),
	// which drivers expose (pgconn.PgError, JDBC's ServerErrorMessage).
	SchemaName, TableName, ConstraintName string
	// cause is an optional underlying error kept for errors.Is/As and logs;
	// it is not shown to the client.
	cause error
}

// New returns an error with the given SQLSTATE and message.
func New(code, msg string) *Error { return &Error{Code: code, Message: msg} }

// Errorf returns an error with the given SQLSTATE and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns a user-facing error whose message is msg and whose cause is
// err (reachable with errors.Unwrap, not shown to the client). If err is nil
// Wrap returns nil.
func Wrap(err error, code, msg string) *Error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Message: msg, cause: err}
}

func (e *Error) Error() string {
	if e.cause != nil {
		return e.Message + ": " + e.cause.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.cause }

// WithDetail returns a copy of e with Detail set.
func (e *Error) WithDetail(format string, args ...any) *Error {
	c := *e
	c.Detail = fmt.Sprintf(format, args...)
	return &c
}

// WithHint returns a copy of e with Hint set.
func (e *Error) WithHint(format string, args ...any) *Error {
	c := *e
	c.Hint = fmt.Sprintf(format, args...)
	return &c
}

// WithPosition returns a copy of e with Position set.
func (e *Error) WithPosition(pos int) *Error {
	c := *e
	c.Position = pos
	return &c
}

// From returns the *Error in err's chain, or nil if there is none.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// Code returns the SQLSTATE of the *Error in err's chain, InternalError
// for any other non-nil error, and "" for nil.
func Code(err error) string {
	if err == nil {
		return ""
	}
	if e := From(err); e != nil {
		return e.Code
	}
	return InternalError
}

// Is reports whether err carries the given SQLSTATE.
func Is(err error, code string) bool { return Code(err) == code }
