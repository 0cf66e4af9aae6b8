package expr

import (
	"testing"

	"github.com/runneldb/runnel/internal/types"
)

// An ordered-set aggregate's state survives Encode/Decode (how the
// streaming engine keeps it) and retracts exactly: the result after
// retractions equals the result over the remaining values.
func TestOrderedSetAggStateRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []types.Type
		extra []types.Datum
		want  string
	}{
		{"percentile_cont", []types.Type{types.Float64, types.Float64, types.Bool}, []types.Datum{types.DFloat64(0.375), types.DBool(false)}, "3"},
		{"percentile_disc", []types.Type{types.Int64, types.Float64, types.Bool}, []types.Datum{types.DFloat64(0.5), types.DBool(true)}, "4"},
		{"mode", []types.Type{types.Int64, types.Bool}, []types.Datum{types.DBool(false)}, "2"},
	} {
		a, err := LookupAggregate(c.name, c.args, false)
		if err != nil {
			t.Fatal(err)
		}
		s := a.NewRetractableState()
		val := func(v int) types.Datum {
			if c.args[0].Kind == types.KindFloat64 {
				return types.DFloat64(float64(v))
			}
			return types.DInt64(int64(v))
		}
		for _, v := range []int{1, 2, 2, 5, 4, 9} {
			if err := s.Add(append([]types.Datum{val(v)}, c.extra...)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Retract(append([]types.Datum{val(1)}, c.extra...)); err != nil {
			t.Fatal(err)
		}
		// Remaining: 2 2 4 5 9.
		d := a.NewRetractableState()
		if err := d.Decode(s.Encode(nil)); err != nil {
			t.Fatalf("%s: decode: %v", c.name, err)
		}
		for _, st := range []AggState{s, d} {
			got, err := st.Result()
			if err != nil {
				t.Fatal(err)
			}
			if g := types.FormatText(got, a.ResultType, nil); g != c.want {
				t.Errorf("%s: got %s; want %s", c.name, g, c.want)
			}
		}
		if err := d.Retract(append([]types.Datum{val(7)}, c.extra...)); err == nil {
			t.Errorf("%s: retracting a value never added succeeded", c.name)
		}
	}
}
