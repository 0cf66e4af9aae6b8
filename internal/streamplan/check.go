package streamplan

import (
	"reflect"
	"unsafe"

	"github.com/runneldb/runnel/internal/expr"
)

// volatileCall returns the name of a volatile function called anywhere in
// es (now(), random(), clock_timestamp(), ...), or "".
//
// A view row is computed when its inputs change and never again, so a
// volatile function would freeze whatever value it had at that moment:
// now() in a view would not be "now" a second later, and two rows
// computed in different epochs would disagree. PostgreSQL's plain view
// evaluates it at every read; no incremental result can match that.
//
// Bound expressions come from several packages (expr, the binder's
// subquery and array helpers) and keep their operands in unexported
// fields, so the search walks them by reflection rather than knowing
// every node type.
func volatileCall(es ...expr.Expr) string {
	w := &volatileWalker{seen: map[uintptr]bool{}}
	for _, e := range es {
		if e == nil {
			continue
		}
		if name := w.walk(reflect.ValueOf(e), 0); name != "" {
			return name
		}
	}
	return ""
}

type volatileWalker struct {
	seen map[uintptr]bool
}

// maxExprDepth bounds the walk; bound expressions are shallow trees.
const maxExprDepth = 64

func (w *volatileWalker) walk(v reflect.Value, depth int) string {
	if depth > maxExprDepth || !v.IsValid() {
		return ""
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return ""
		}
		return w.walk(v.Elem(), depth+1)
	case reflect.Pointer:
		if v.IsNil() || w.seen[v.Pointer()] {
			return ""
		}
		w.seen[v.Pointer()] = true
		if f, ok := exported(v).Interface().(*expr.FuncExpr); ok && f.Volatile() {
			return f.Name
		}
		return w.walk(v.Elem(), depth+1)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if name := w.walk(v.Field(i), depth+1); name != "" {
				return name
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if name := w.walk(v.Index(i), depth+1); name != "" {
				return name
			}
		}
	}
	return ""
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
