// Package expr holds Runnel's scalar expressions, functions, operators,
// casts and aggregate and window functions, with PostgreSQL semantics
// (NULL propagation, overflow and division-by-zero errors, implicit
// coercion and overload resolution). The binder builds expressions through
// this package's constructors; batch and streaming executors evaluate them.
package expr
