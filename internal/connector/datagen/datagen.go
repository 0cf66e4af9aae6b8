package datagen

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/runneldb/runnel/internal/types"
)

// Kind is how a column's values are made.
type Kind uint8

const (
	// KindRandom: a uniform random value, a pure function of (seed, row).
	KindRandom Kind = iota
	// KindSequence: start + row·step, ending the stream after end.
	KindSequence
)

func (k Kind) String() string {
	if k == KindSequence {
		return "sequence"
	}
	return "random"
}

// Field is the resolved generator of one column. Integers, dates (days
// since 1970-01-01) and timestamps (µs since the epoch) use the int64
// fields; real and double precision the float64 ones; varchar sequences
// are the decimal text of an integer sequence.
type Field struct {
	Name string
	Type types.Type
	Kind Kind

	// Sequence: value(i) = Start + i·Step for row i, the last row being
	// the one whose value is End (inclusive).
	Start, End, Step int64
	FStart, FEnd     float64

	// Random: uniform in [Min, Max] (integers, dates, timestamps) or
	// [FMin, FMax) (floats); varchar: Length random letters and digits.
	Min, Max   int64
	FMin, FMax float64
	Length     int
	Seed       uint64
}

// Config configures a Generator.
type Config struct {
	// Fields holds one generator per column, in column order.
	Fields []Field
	// RowsPerSecond is the wall-clock rate of each split
	// (datagen.rows.per.second); 0 means unthrottled. The generator
	// itself ignores it; a source executor paces itself by it.
	RowsPerSecond int
	// SplitNum is the number of parallel splits (datagen.split.num).
	SplitNum int
}

// Generator produces rows; it is immutable and safe for concurrent use.
type Generator struct {
	cfg   Config
	count int64 // rows in the stream; -1: unbounded
}

// NewGenerator checks cfg and returns its generator.
func NewGenerator(cfg Config) (*Generator, error) {
	g := &Generator{cfg: cfg, count: -1}
	if len(cfg.Fields) == 0 {
		return nil, fmt.Errorf("datagen: no columns")
	}
	for i := range cfg.Fields {
		f := &cfg.Fields[i]
		if err := f.check(); err != nil {
			return nil, err
		}
		if f.Kind == KindSequence {
			if n := f.count(); g.count < 0 || n < g.count {
				g.count = n
			}
		}
	}
	return g, nil
}

func (f *Field) check() error {
	switch f.Type.Kind {
	case types.KindInt16, types.KindInt32, types.KindInt64, types.KindDate,
		types.KindTimestamp, types.KindTimestamptz, types.KindVarchar:
		if f.Kind == KindSequence && (f.Step <= 0 || f.End < f.Start) {
			return fmt.Errorf("datagen: column %q: sequence needs start <= end and step > 0", f.Name)
		}
		if f.Kind == KindRandom && f.Type.Kind != types.KindVarchar && f.Max < f.Min {
			return fmt.Errorf("datagen: column %q: random needs min <= max", f.Name)
		}
		if f.Kind == KindRandom && f.Type.Kind == types.KindVarchar && f.Length < 0 {
			return fmt.Errorf("datagen: column %q: negative length", f.Name)
		}
	case types.KindFloat32, types.KindFloat64:
		if f.Kind == KindSequence && !(f.FEnd >= f.FStart) {
			return fmt.Errorf("datagen: column %q: sequence needs start <= end", f.Name)
		}
		if f.Kind == KindRandom && !(f.FMax >= f.FMin) {
			return fmt.Errorf("datagen: column %q: random needs min <= max", f.Name)
		}
	case types.KindBool:
		if f.Kind == KindSequence {
			return fmt.Errorf("datagen: column %q: boolean columns are random only", f.Name)
		}
	default:
		return fmt.Errorf("datagen: column %q: type %s is not supported", f.Name, f.Type.Name())
	}
	return nil
}

// count returns the rows a sequence field allows (saturating at MaxInt64).
func (f *Field) count() int64 {
	if f.Type.Kind == types.KindFloat32 || f.Type.Kind == types.KindFloat64 {
		n := math.Floor(f.FEnd-f.FStart) + 1
		if n >= math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(n)
	}
	span := (uint64(f.End) - uint64(f.Start)) / uint64(f.Step)
	if span >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(span) + 1
}

// Config returns the configuration.
func (g *Generator) Config() Config { return g.cfg }

// Count returns the number of rows in the stream: the shortest sequence
// column's length, or -1 when every column is random (unbounded).
func (g *Generator) Count() int64 { return g.count }

// Row returns row i (allocating).
func (g *Generator) Row(i int64) types.Row {
	row := make(types.Row, len(g.cfg.Fields))
	g.fill(i, row)
	return row
}

func (g *Generator) fill(i int64, row types.Row) {
	for c := range g.cfg.Fields {
		row[c] = g.cfg.Fields[c].value(i)
	}
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func (f *Field) value(i int64) types.Datum {
	var v int64
	var fv float64
	float := f.Type.Kind == types.KindFloat32 || f.Type.Kind == types.KindFloat64
	if f.Kind == KindSequence {
		if float {
			fv = f.FStart + float64(i)
		} else {
			v = f.Start + i*f.Step
		}
	} else {
		r := newRNG(f.Seed, uint64(i))
		switch {
		case float:
			fv = f.FMin + r.float()*(f.FMax-f.FMin)
			if fv >= f.FMax && f.FMax > f.FMin { // rounding at the top end
				fv = math.Nextafter(f.FMax, f.FMin)
			}
		case f.Type.Kind == types.KindBool:
			v = int64(r.next() & 1)
		case f.Type.Kind == types.KindVarchar:
			b := make([]byte, f.Length)
			var bitsLeft int
			var word uint64
			for j := range b {
				if bitsLeft < 6 {
					word, bitsLeft = r.next(), 64
				}
				b[j] = alnum[(word&63)%uint64(len(alnum))]
				word >>= 6
				bitsLeft -= 6
			}
			return types.DVarchar(string(b))
		default:
			span := uint64(f.Max) - uint64(f.Min) + 1
			if span == 0 { // the whole int64 range
				v = int64(r.next())
			} else {
				v = f.Min + int64(r.intn(span))
			}
		}
	}
	switch f.Type.Kind {
	case types.KindInt16:
		return types.DInt16(int16(v))
	case types.KindInt32:
		return types.DInt32(int32(v))
	case types.KindInt64:
		return types.DInt64(v)
	case types.KindFloat32:
		f32 := float32(fv)
		// Rounding to float32 must not reach the exclusive upper bound.
		if f.Kind == KindRandom && f32 >= float32(f.FMax) && f.FMax > f.FMin {
			f32 = math.Nextafter32(float32(f.FMax), float32(f.FMin))
		}
		return types.DFloat32(f32)
	case types.KindFloat64:
		return types.DFloat64(fv)
	case types.KindBool:
		return types.DBool(v != 0)
	case types.KindDate:
		return types.DDate(v)
	case types.KindTimestamp:
		return types.DTimestamp(v)
	case types.KindTimestamptz:
		return types.DTimestamptz(v)
	case types.KindVarchar: // a sequence
		return types.DVarchar(strconv.FormatInt(v, 10))
	}
	return types.NullDatum
}

// FillRows writes rows next, next+step, ... into rows until rows is full
// or the stream ends. Each rows[i] must have length >= the column count;
// the caller owns the rows. It returns how many rows it wrote and the row
// index to continue from.
func (g *Generator) FillRows(next, step int64, rows []types.Row) (int, int64) {
	if step <= 0 {
		step = 1
	}
	i := 0
	for ; i < len(rows) && (g.count < 0 || next < g.count); i++ {
		g.fill(next, rows[i])
		next += step
	}
	return i, next
}

// AppendRows appends up to max fresh rows (next, next+step, ...) to dst;
// the datums of one call share one backing array. It returns the extended
// slice and the row index to continue from.
func (g *Generator) AppendRows(dst []types.Row, next, step int64, max int) ([]types.Row, int64) {
	if step <= 0 {
		step = 1
	}
	if g.count >= 0 {
		if next >= g.count {
			return dst, next
		}
		if left := (g.count - next + step - 1) / step; left < int64(max) {
			max = int(left)
		}
	}
	if max <= 0 {
		return dst, next
	}
	ncols := len(g.cfg.Fields)
	start := len(dst)
	dst = slices.Grow(dst, max)
	slab := make([]types.Datum, max*ncols)
	for i := range max {
		dst = append(dst, types.Row(slab[i*ncols:(i+1)*ncols:(i+1)*ncols]))
	}
	n, next := g.FillRows(next, step, dst[start:])
	return dst[:start+n], next
}

// Reader produces the rows of one split; its state is Position(), which
// a source executor checkpoints and passes back to NewReader on recovery.
// Not safe for concurrent use.
type Reader struct {
	g          *Generator
	next, step int64
}

// StartPosition is the position of a split that has produced nothing yet.
func StartPosition(split int) int64 { return int64(split) }

// NewReader returns a reader of split split (0-based) of numSplits,
// resuming at position (StartPosition(split) for a new split).
func (g *Generator) NewReader(split, numSplits int, position int64) (*Reader, error) {
	if numSplits <= 0 || split < 0 || split >= numSplits {
		return nil, fmt.Errorf("datagen: split %d of %d is out of range", split, numSplits)
	}
	if position < 0 || position%int64(numSplits) != int64(split) {
		return nil, fmt.Errorf("datagen: position %d does not belong to split %d of %d", position, split, numSplits)
	}
	return &Reader{g: g, next: position, step: int64(numSplits)}, nil
}

// Position is the index of the next row this split will produce.
func (r *Reader) Position() int64 { return r.next }

// Done reports whether a bounded stream has no rows left for this split.
func (r *Reader) Done() bool { return r.g.count >= 0 && r.next >= r.g.count }

// Next appends up to max fresh rows to dst (see AppendRows) and advances.
func (r *Reader) Next(dst []types.Row, max int) []types.Row {
	dst, r.next = r.g.AppendRows(dst, r.next, r.step, max)
	return dst
}

// NextChunk appends up to max fresh rows to c as inserts (a source is
// append-only) and returns how many it appended.
func (r *Reader) NextChunk(c *types.Chunk, max int) int {
	before := len(c.Rows)
	c.Rows = r.Next(c.Rows, max)
	for range len(c.Rows) - before {
		c.Ops = append(c.Ops, types.OpInsert)
	}
	return len(c.Rows) - before
}

// Fill overwrites rows (see FillRows), advances, and returns the count.
func (r *Reader) Fill(rows []types.Row) int {
	n, next := r.g.FillRows(r.next, r.step, rows)
	r.next = next
	return n
}
