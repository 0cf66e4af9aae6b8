package datagen

import (
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Option names. Per-column options are fields.<column>.<property>.
const (
	OptRowsPerSecond     = "datagen.rows.per.second" // per split; default 10; 0 = unthrottled
	OptSplitNum          = "datagen.split.num"       // default 1
	DefaultRowsPerSecond = 10
	DefaultVarcharLength = 10
)

// Per-column properties.
const (
	propKind        = "kind"          // sequence | random (default random)
	propStart       = "start"         // sequence
	propEnd         = "end"           // sequence
	propStep        = "step"          // timestamp sequence: an interval (default '1 second')
	propMin         = "min"           // random
	propMax         = "max"           // random
	propLength      = "length"        // random varchar
	propSeed        = "seed"          // random
	propMaxPast     = "max_past"      // random timestamp: an interval before basetime
	propMaxPastMode = "max_past_mode" // only 'absolute'
	propBaseTime    = "basetime"      // random timestamp with max_past
)

// ParseOptions reads the WITH options of a datagen source or table with
// the given columns. Keys are matched case-insensitively, column names
// exactly or else case-insensitively; "connector" is ignored and any
// other unknown key is an error. Errors are *sqlerr.Error naming the
// option (22023, or 0A000 for an unsupported column type or mode).
//
// Literal values ('2024-01-01 00:00:00', '1 hour') are read with
// PostgreSQL's input functions (time zone UTC). A random timestamp with
// max_past needs a basetime: call PinOptions once at CREATE time so the
// stored options carry it and every restart generates the same rows.
func ParseOptions(columns []connector.Column, opts map[string]string) (Config, error) {
	cfg := Config{RowsPerSecond: DefaultRowsPerSecond, SplitNum: 1}
	props := make([]map[string]string, len(columns))
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		val := strings.TrimSpace(opts[key])
		lk := strings.ToLower(strings.TrimSpace(key))
		switch {
		case lk == "connector":
		case lk == OptRowsPerSecond:
			v, err := strconv.ParseInt(val, 10, 32)
			if err != nil || v < 0 {
				return Config{}, badValue(key, val, "a non-negative integer")
			}
			cfg.RowsPerSecond = int(v)
		case lk == OptSplitNum:
			v, err := strconv.ParseInt(val, 10, 32)
			if err != nil || v < 1 {
				return Config{}, badValue(key, val, "a positive integer")
			}
			cfg.SplitNum = int(v)
		case strings.HasPrefix(lk, "fields."):
			rest := strings.TrimSpace(key)[len("fields."):]
			dot := strings.LastIndexByte(rest, '.')
			if dot <= 0 {
				return Config{}, sqlerr.Errorf(sqlerr.InvalidParameterValue,
					"invalid datagen option %q: want fields.<column>.<property>", key)
			}
			col, prop := rest[:dot], strings.ToLower(rest[dot+1:])
			ci := findColumn(columns, col)
			if ci < 0 {
				return Config{}, sqlerr.Errorf(sqlerr.UndefinedColumn,
					"datagen option %q names column %q, which does not exist", key, col)
			}
			if props[ci] == nil {
				props[ci] = map[string]string{}
			}
			props[ci][prop] = val
		default:
			return Config{}, sqlerr.Errorf(sqlerr.InvalidParameterValue, "unknown datagen option %q", key)
		}
	}
	cfg.Fields = make([]Field, len(columns))
	for i, c := range columns {
		f, err := parseField(i, c, props[i])
		if err != nil {
			return Config{}, err
		}
		cfg.Fields[i] = f
	}
	return cfg, nil
}

// PinOptions returns opts with what ParseOptions would otherwise have to
// take from the clock made explicit: fields.<col>.basetime = now for every
// random timestamp column that has neither min/max nor a basetime (its
// values lie in [basetime - max_past, basetime]). The SQL layer calls it
// once when the source is created and stores the result, so that every
// restart generates the same rows.
func PinOptions(columns []connector.Column, opts map[string]string, now time.Time) map[string]string {
	out := make(map[string]string, len(opts)+1)
	for k, v := range opts {
		out[k] = v
	}
	for _, c := range columns {
		if c.Type.Kind != types.KindTimestamp && c.Type.Kind != types.KindTimestamptz {
			continue
		}
		random, bounded := true, false
		pre := "fields." + strings.ToLower(c.Name) + "."
		for k, v := range opts {
			lk := strings.ToLower(strings.TrimSpace(k))
			if !strings.HasPrefix(lk, pre) {
				continue
			}
			switch lk[len(pre):] {
			case propKind:
				random = !strings.EqualFold(strings.TrimSpace(v), "sequence")
			case propMin, propMax, propBaseTime:
				bounded = true
			}
		}
		if random && !bounded {
			out[pre+propBaseTime] = now.UTC().Format("2006-01-02 15:04:05.999999")
		}
	}
	return out
}

func findColumn(columns []connector.Column, name string) int {
	for i, c := range columns {
		if c.Name == name {
			return i
		}
	}
	for i, c := range columns {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

func badValue(key, val, want string) error {
	return sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid value %q for option %q: want %s", val, key, want)
}

// fieldParser reads one column's properties, remembering which it used so
// that a property that does not apply is reported.
type fieldParser struct {
	col   connector.Column
	props map[string]string
	used  map[string]bool
}

func (p *fieldParser) key(prop string) string { return "fields." + p.col.Name + "." + prop }

func (p *fieldParser) get(prop string) (string, bool) {
	v, ok := p.props[prop]
	if ok {
		p.used[prop] = true
	}
	return v, ok
}

// literal parses a property as a value of the column's type (or of t).
func (p *fieldParser) literal(prop string, t types.Type) (types.Datum, bool, error) {
	v, ok := p.get(prop)
	if !ok {
		return types.NullDatum, false, nil
	}
	d, err := types.ParseText(v, t, nil)
	if err != nil {
		var se *sqlerr.Error
		msg := err.Error()
		if errors.As(err, &se) {
			msg = se.Message
		}
		return types.NullDatum, false, sqlerr.Wrap(err, sqlerr.InvalidParameterValue,
			"invalid value "+strconv.Quote(v)+" for option "+strconv.Quote(p.key(prop))+": "+msg)
	}
	switch t.Kind {
	case types.KindDate, types.KindTimestamp, types.KindTimestamptz:
		if d.Int() == types.PosInfinity || d.Int() == types.NegInfinity {
			return types.NullDatum, false, badValue(p.key(prop), v, "a finite value")
		}
	case types.KindFloat32, types.KindFloat64:
		if math.IsNaN(d.Float()) || math.IsInf(d.Float(), 0) {
			return types.NullDatum, false, badValue(p.key(prop), v, "a finite number")
		}
	}
	return d, true, nil
}

// intervalMicros parses a fixed-length interval ('1 second', '2h 37min';
// a day counts 24 hours; months are rejected).
func (p *fieldParser) intervalMicros(prop string) (int64, bool, error) {
	d, ok, err := p.literal(prop, types.Interval)
	if err != nil || !ok {
		return 0, ok, err
	}
	iv := d.Interval()
	if iv.Months != 0 {
		return 0, false, badValue(p.key(prop), p.props[prop], "an interval without months or years")
	}
	us := int64(iv.Days)*86_400_000_000 + iv.Micros
	return us, true, nil
}

func typeMax(k types.Kind) int64 {
	switch k {
	case types.KindInt16:
		return math.MaxInt16
	case types.KindInt32:
		return math.MaxInt32
	}
	return math.MaxInt64
}

func parseField(pos int, col connector.Column, props map[string]string) (Field, error) {
	p := &fieldParser{col: col, props: props, used: map[string]bool{}}
	f := Field{Name: col.Name, Type: col.Type, Kind: KindRandom, Seed: uint64(pos + 1), Step: 1}
	if v, ok := p.get(propKind); ok {
		switch strings.ToLower(v) {
		case "random":
		case "sequence":
			f.Kind = KindSequence
		default:
			return Field{}, badValue(p.key(propKind), v, "sequence or random")
		}
	}
	if f.Kind == KindRandom {
		if v, ok := p.get(propSeed); ok {
			s, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				// RisingWave accepts negative seeds; keep their bits.
				n, err2 := strconv.ParseInt(v, 10, 64)
				if err2 != nil {
					return Field{}, badValue(p.key(propSeed), v, "a 64-bit integer")
				}
				s = uint64(n)
			}
			f.Seed = s
		}
	}
	k := col.Type.Kind
	var err error
	switch k {
	case types.KindInt16, types.KindInt32, types.KindInt64:
		err = p.intField(&f, col.Type, 0, typeMax(k))
	case types.KindVarchar:
		if f.Kind == KindSequence {
			err = p.intField(&f, types.Int64, 0, math.MaxInt64)
		} else {
			f.Length = DefaultVarcharLength
			if v, ok := p.get(propLength); ok {
				n, perr := strconv.ParseInt(v, 10, 32)
				if perr != nil || n < 0 || n > 1<<20 {
					return Field{}, badValue(p.key(propLength), v, "an integer from 0 to 1048576")
				}
				f.Length = int(n)
			}
		}
	case types.KindFloat32, types.KindFloat64:
		err = p.floatField(&f)
	case types.KindBool:
		if f.Kind == KindSequence {
			return Field{}, sqlerr.Errorf(sqlerr.FeatureNotSupported,
				"datagen column %q: kind sequence is not supported for type boolean", col.Name)
		}
	case types.KindDate:
		err = p.timeField(&f, false)
	case types.KindTimestamp, types.KindTimestamptz:
		err = p.timeField(&f, true)
	default:
		return Field{}, sqlerr.Errorf(sqlerr.FeatureNotSupported,
			"datagen does not support column %q of type %s", col.Name, col.Type.Name())
	}
	if err != nil {
		return Field{}, err
	}
	// A property that the column's kind and type did not read is a mistake
	// (fields.v.min on a sequence, fields.v.length on an integer...).
	names := make([]string, 0, len(props))
	for prop := range props {
		names = append(names, prop)
	}
	sort.Strings(names)
	for _, prop := range names {
		if !p.used[prop] {
			return Field{}, sqlerr.Errorf(sqlerr.InvalidParameterValue,
				"datagen option %q does not apply to a %s column of type %s", p.key(prop), f.Kind, col.Type.Name())
		}
	}
	if err := f.check(); err != nil {
		return Field{}, sqlerr.Wrap(err, sqlerr.InvalidParameterValue, err.Error())
	}
	return f, nil
}

func (p *fieldParser) intField(f *Field, t types.Type, lo, hi int64) error {
	a, b := propMin, propMax
	if f.Kind == KindSequence {
		a, b = propStart, propEnd
	}
	x, okA, err := p.literal(a, t)
	if err != nil {
		return err
	}
	y, okB, err := p.literal(b, t)
	if err != nil {
		return err
	}
	if okA {
		lo = x.Int()
	}
	if okB {
		hi = y.Int()
	}
	if hi < lo {
		return sqlerr.Errorf(sqlerr.InvalidParameterValue, "datagen column %q: %q (%d) is greater than %q (%d)",
			f.Name, p.key(a), lo, p.key(b), hi)
	}
	if f.Kind == KindSequence {
		f.Start, f.End = lo, hi
	} else {
		f.Min, f.Max = lo, hi
	}
	return nil
}

func (p *fieldParser) floatField(f *Field) error {
	a, b := propMin, propMax
	lo, hi := 0.0, 1.0
	if f.Kind == KindSequence {
		a, b = propStart, propEnd
		hi = math.MaxFloat64
	}
	x, okA, err := p.literal(a, types.Float64)
	if err != nil {
		return err
	}
	y, okB, err := p.literal(b, types.Float64)
	if err != nil {
		return err
	}
	if okA {
		lo = x.Float()
	}
	if okB {
		hi = y.Float()
	}
	if hi < lo {
		return sqlerr.Errorf(sqlerr.InvalidParameterValue, "datagen column %q: %q (%g) is greater than %q (%g)",
			f.Name, p.key(a), lo, p.key(b), hi)
	}
	if f.Kind == KindSequence {
		f.FStart, f.FEnd = lo, hi
	} else {
		f.FMin, f.FMax = lo, hi
	}
	return nil
}

// timeField reads a date (days) or timestamp (µs) column.
func (p *fieldParser) timeField(f *Field, timestamp bool) error {
	t := p.col.Type
	if f.Kind == KindSequence {
		start, ok, err := p.literal(propStart, t)
		if err != nil {
			return err
		}
		if !ok {
			return sqlerr.Errorf(sqlerr.InvalidParameterValue,
				"datagen column %q: a %s sequence needs %q", f.Name, t.Name(), p.key(propStart))
		}
		f.Start, f.End, f.Step = start.Int(), math.MaxInt64, 1
		if timestamp {
			f.Step = 1_000_000 // one second
			step, ok, err := p.intervalMicros(propStep)
			if err != nil {
				return err
			}
			if ok {
				if step <= 0 {
					return badValue(p.key(propStep), p.props[propStep], "a positive interval")
				}
				f.Step = step
			}
		}
		end, ok, err := p.literal(propEnd, t)
		if err != nil {
			return err
		}
		if ok {
			f.End = end.Int()
		}
		if f.End < f.Start {
			return sqlerr.Errorf(sqlerr.InvalidParameterValue, "datagen column %q: %q is before %q",
				f.Name, p.key(propEnd), p.key(propStart))
		}
		return nil
	}
	lo, okLo, err := p.literal(propMin, t)
	if err != nil {
		return err
	}
	hi, okHi, err := p.literal(propMax, t)
	if err != nil {
		return err
	}
	if okLo || okHi {
		if !okLo || !okHi {
			return sqlerr.Errorf(sqlerr.InvalidParameterValue,
				"datagen column %q: give both %q and %q", f.Name, p.key(propMin), p.key(propMax))
		}
		f.Min, f.Max = lo.Int(), hi.Int()
		if f.Max < f.Min {
			return sqlerr.Errorf(sqlerr.InvalidParameterValue, "datagen column %q: %q is after %q",
				f.Name, p.key(propMin), p.key(propMax))
		}
		return nil
	}
	if !timestamp {
		return sqlerr.Errorf(sqlerr.InvalidParameterValue,
			"datagen column %q: a random date needs %q and %q", f.Name, p.key(propMin), p.key(propMax))
	}
	if mode, ok := p.get(propMaxPastMode); ok && !strings.EqualFold(mode, "absolute") {
		return sqlerr.Errorf(sqlerr.FeatureNotSupported,
			"datagen option %q = %q is not supported: values must not depend on when they are generated (use 'absolute')",
			p.key(propMaxPastMode), mode)
	}
	past, ok, err := p.intervalMicros(propMaxPast)
	if err != nil {
		return err
	}
	if !ok {
		past = 86_400_000_000 // one day, RisingWave's default
	}
	base, ok, err := p.literal(propBaseTime, t)
	if err != nil {
		return err
	}
	if !ok {
		return sqlerr.Errorf(sqlerr.InvalidParameterValue,
			"datagen column %q: a random %s needs %q and %q, or %q (the SQL layer pins it with datagen.PinOptions)",
			f.Name, t.Name(), p.key(propMin), p.key(propMax), p.key(propBaseTime))
	}
	if past < 0 {
		return badValue(p.key(propMaxPast), p.props[propMaxPast], "a non-negative interval")
	}
	f.Max = base.Int()
	f.Min = f.Max - past
	return nil
}
