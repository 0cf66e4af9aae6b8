package types

import (
	"testing"
	"time"
)

func TestPGTypmodRoundTrip(t *testing.T) {
	for _, c := range []struct {
		t    Type
		want int32
		name string
	}{
		{Type{Kind: KindVarchar, Mod: 10}, 14, "character varying(10)"},
		{Type{Kind: KindNumeric, Mod: NumericTypmod(10, 2)}, 10<<16 | 2 + 4, "numeric(10,2)"},
		{Type{Kind: KindNumeric, Mod: NumericTypmod(3, -1)}, 3<<16 | 0x7ff + 4, "numeric(3,-1)"},
		{Type{Kind: KindTimestamptz, Mod: 3}, 3, "timestamp(3) with time zone"},
		{Varchar, -1, "character varying"},
		{Text, -1, "text"},
	} {
		if got := c.t.PGTypmod(); got != c.want {
			t.Errorf("%s.PGTypmod() = %d; want %d", c.t, got, c.want)
		}
		back := Type{Kind: c.t.Kind, Text: c.t.Text}.WithPGTypmod(c.want)
		if back != c.t {
			t.Errorf("WithPGTypmod(%d) = %+v; want %+v", c.want, back, c.t)
		}
		if c.t.Name() != c.name {
			t.Errorf("Name() = %q; want %q", c.t.Name(), c.name)
		}
	}
	if _, err := Numeric.MakeTypmod([]int64{0}); err == nil {
		t.Errorf("numeric(0) accepted")
	}
	if ty, err := Numeric.MakeTypmod([]int64{5}); err != nil || ty.Name() != "numeric(5,0)" {
		t.Errorf("numeric(5) = %v, %v", ty, err)
	}
	if _, err := Varchar.MakeTypmod([]int64{0}); err == nil {
		t.Errorf("varchar(0) accepted")
	}
}

func TestDateLimits(t *testing.T) {
	if got := daysFromCivil(-4713, 11, 24); got != MinDate {
		t.Errorf("MinDate = %d; calendar says %d", MinDate, got)
	}
	if got := daysFromCivil(5874897, 12, 31); got != MaxDate {
		t.Errorf("MaxDate = %d; calendar says %d", MaxDate, got)
	}
	if got := daysFromCivil(294247, 1, 1) * microsPerDay; got != EndTimestamp {
		t.Errorf("EndTimestamp = %d; calendar says %d", EndTimestamp, got)
	}
	// the calendar round-trips over the whole date range
	for d := MinDate; d <= MaxDate; d += 9973 {
		y, m, dd := civilFromDays(d)
		if daysFromCivil(y, m, dd) != d {
			t.Fatalf("civilFromDays(%d) = %d-%d-%d does not map back", d, y, m, dd)
		}
	}
}

func TestSpecialTimesUseOptions(t *testing.T) {
	loc, err := LoadTimeZone("Asia/Tokyo")
	if err != nil {
		t.Skip(err)
	}
	// 2024-03-01 20:30 UTC is 2024-03-02 05:30 in Tokyo.
	now := time.Date(2024, 3, 1, 20, 30, 0, 0, time.UTC)
	opt := &FormatOptions{Location: loc, Now: now}
	for _, c := range []struct {
		in   string
		typ  Type
		want string
	}{
		{"today", Date, "2024-03-02"},
		{"tomorrow", Date, "2024-03-03"},
		{"yesterday", Date, "2024-03-01"},
		{"now", Timestamptz, "2024-03-02 05:30:00+09"},
		{"now", Timestamp, "2024-03-02 05:30:00"},
		{"today", Timestamptz, "2024-03-02 00:00:00+09"},
		{"tomorrow 10:00", Timestamp, "2024-03-03 10:00:00"},
		{"epoch", Timestamptz, "1970-01-01 09:00:00+09"},
	} {
		d, err := ParseText(c.in, c.typ, opt)
		if err != nil {
			t.Fatalf("ParseText(%q, %s): %v", c.in, c.typ, err)
		}
		if got := FormatText(d, c.typ, opt); got != c.want {
			t.Errorf("ParseText(%q, %s) = %q; want %q", c.in, c.typ, got, c.want)
		}
	}
}
