package expr

// #cgo LDFLAGS: -lm
// #include <math.h>
import "C"

// libmCbrt is the C library's cbrt, which PostgreSQL's cbrt(float8)
// calls: glibc's result is not always the correctly rounded one that Go's
// math.Cbrt returns (cbrt(27) is 3.0000000000000004 there), and users
// compare the printed digits. The build already needs cgo (pg_query).
func libmCbrt(x float64) float64 { return float64(C.cbrt(C.double(x))) }
