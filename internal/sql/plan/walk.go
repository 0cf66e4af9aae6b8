package plan

import (
	"reflect"
	"unsafe"

	"github.com/runneldb/runnel/internal/expr"
)

// MaxWalkDepth bounds WalkBound's recursion (I9). The parser refuses
// statements nested more than 1000 levels (54001), and one level of an
// expression is a few reflection levels, so a statement that got through
// stays well below it; past it the walk stops and reports so, and the
// planner refuses the view rather than miss what the walk did not see.
const MaxWalkDepth = 8192

// WalkBound calls visit on every pointer reachable from the bound
// expression e, depth first; visit returns false to not look inside that
// pointer (and false ends nothing else). Bound expressions come from
// several packages (expr, the binder's subquery and array helpers) and keep
// their operands in unexported fields, so the walk uses reflection rather
// than knowing every node type. It returns false if the walk was cut at
// MaxWalkDepth.
func WalkBound(e expr.Expr, visit func(x any) bool) bool {
	if e == nil {
		return true
	}
	seen := map[uintptr]bool{}
	complete := true
	var walk func(v reflect.Value, depth int)
	walk = func(v reflect.Value, depth int) {
		if !v.IsValid() {
			return
		}
		if depth > MaxWalkDepth {
			complete = false
			return
		}
		switch v.Kind() {
		case reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), depth+1)
			}
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			if visit(exported(v).Interface()) {
				walk(v.Elem(), depth+1)
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				walk(v.Field(i), depth+1)
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), depth+1)
			}
		}
	}
	walk(reflect.ValueOf(e), 0)
	return complete
}

// exported makes a value read from an unexported field usable with
// Interface (read only).
func exported(v reflect.Value) reflect.Value {
	if v.CanInterface() {
		return v
	}
	if v.CanAddr() {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	// A pointer held in an unexported field of a non-addressable value:
	// rebuild it from its address.
	return reflect.NewAt(v.Type().Elem(), v.UnsafePointer())
}
