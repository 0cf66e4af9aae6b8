package nexmark

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

const testEvents = 1_000_000

func TestKindCountsExact(t *testing.T) {
	var counts [3]int64
	for n := int64(0); n < testEvents; n++ {
		counts[TypeOf(n)]++
	}
	if want := [3]int64{20_000, 60_000, 920_000}; counts != want {
		t.Fatalf("counts over %d ids = %v; want %v", testEvents, counts, want)
	}
	g := NewGenerator(Config{MaxEvents: testEvents})
	for tt := TypePerson; tt <= TypeBid; tt++ {
		if got := g.Count(tt); got != counts[tt] {
			t.Errorf("Count(%v) = %d; want %d", tt, got, counts[tt])
		}
	}
}

func TestOrdinalRoundTrip(t *testing.T) {
	var next [3]int64
	for n := int64(0); n < 10_000; n++ {
		tt, k := Ordinal(n)
		if tt != TypeOf(n) || k != next[tt] {
			t.Fatalf("Ordinal(%d) = %v,%d; want %v,%d", n, tt, k, TypeOf(n), next[tt])
		}
		if got := EventID(tt, k); got != n {
			t.Fatalf("EventID(%v,%d) = %d; want %d", tt, k, got, n)
		}
		next[tt]++
		// countBelow(t, n+1) counts the events of each type with id <= n.
		for ct := TypePerson; ct <= TypeBid; ct++ {
			if got := countBelow(ct, n+1); got != next[ct] {
				t.Fatalf("countBelow(%v,%d) = %d; want %d", ct, n+1, got, next[ct])
			}
		}
	}
}

// TestIDsAndLastRules walks the stream in order, keeping the newest person
// and auction created so far, and checks the closed forms and the ids the
// events carry.
func TestIDsAndLastRules(t *testing.T) {
	g := NewGenerator(Config{})
	newestPerson, newestAuction := int64(-1), int64(-1)
	for n := int64(0); n < 20_000; n++ {
		e := g.Event(n)
		switch e.Type {
		case TypePerson:
			newestPerson++
			if e.Person.ID != FirstPersonID+newestPerson {
				t.Fatalf("event %d: person id %d; want %d", n, e.Person.ID, FirstPersonID+newestPerson)
			}
		case TypeAuction:
			newestAuction++
			if e.Auction.ID != FirstAuctionID+newestAuction {
				t.Fatalf("event %d: auction id %d; want %d", n, e.Auction.ID, FirstAuctionID+newestAuction)
			}
		}
		if lastPerson(n) != newestPerson || lastAuction(n) != newestAuction {
			t.Fatalf("event %d: lastPerson=%d lastAuction=%d; want %d, %d",
				n, lastPerson(n), lastAuction(n), newestPerson, newestAuction)
		}
	}
}

// TestReferencesExist checks that every person or auction an event refers
// to exists at or before that event, up to the documented lead, and lies
// in the active window.
func TestReferencesExist(t *testing.T) {
	g := NewGenerator(Config{})
	cfg := g.Config()
	newestPerson, newestAuction := int64(-1), int64(-1)
	var refs, ahead int
	checkPerson := func(n, id int64, what string) {
		idx := id - FirstPersonID
		refs++
		if idx > newestPerson {
			ahead++
		}
		if idx < 0 || idx > newestPerson+int64(cfg.PersonIDLead) || idx < newestPerson+1-int64(cfg.ActivePeople) {
			t.Fatalf("event %d: %s %d outside [%d, %d+%d] (newest person %d)",
				n, what, id, FirstPersonID+max(0, newestPerson+1-int64(cfg.ActivePeople)),
				FirstPersonID+newestPerson, cfg.PersonIDLead, FirstPersonID+newestPerson)
		}
	}
	for n := int64(0); n < testEvents; n++ {
		e := g.Event(n)
		switch e.Type {
		case TypePerson:
			newestPerson++
		case TypeAuction:
			newestAuction++
			checkPerson(n, e.Auction.Seller, "seller")
		case TypeBid:
			checkPerson(n, e.Bid.Bidder, "bidder")
			idx := e.Bid.Auction - FirstAuctionID
			refs++
			if idx > newestAuction {
				ahead++
			}
			if idx < 0 || idx > newestAuction+int64(cfg.AuctionIDLead) || idx < newestAuction-int64(cfg.InFlightAuctions) {
				t.Fatalf("event %d: auction %d outside the in-flight window (newest auction %d, lead %d)",
					n, e.Bid.Auction, FirstAuctionID+newestAuction, cfg.AuctionIDLead)
			}
		}
	}
	t.Logf("%d references, %.3f%% to ids within the lead ahead of the newest", refs, 100*float64(ahead)/float64(refs))
	// With no lead nothing may point ahead.
	g0 := NewGenerator(Config{PersonIDLead: -1, AuctionIDLead: -1})
	for n := int64(0); n < 200_000; n++ {
		e := g0.Event(n)
		switch e.Type {
		case TypeAuction:
			if e.Auction.Seller > FirstPersonID+lastPerson(n) {
				t.Fatalf("no lead: event %d seller %d ahead of newest person %d", n, e.Auction.Seller, FirstPersonID+lastPerson(n))
			}
		case TypeBid:
			// The hot bidder (first of the latest batch, +1) may be one ahead
			// when the batch has just begun; it is the only allowed case.
			hotBidder := FirstPersonID + lastPerson(n)/hotBatch*hotBatch + 1
			if e.Bid.Bidder > FirstPersonID+lastPerson(n) && e.Bid.Bidder != hotBidder {
				t.Fatalf("no lead: event %d bidder %d ahead of newest person %d", n, e.Bid.Bidder, FirstPersonID+lastPerson(n))
			}
			if e.Bid.Auction > FirstAuctionID+lastAuction(n) {
				t.Fatalf("no lead: event %d auction %d ahead of newest auction %d", n, e.Bid.Auction, FirstAuctionID+lastAuction(n))
			}
		}
	}
}

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f; want %.4f ± %.4f", what, got, want, tol)
	} else {
		t.Logf("%s = %.4f (want %.4f ± %.4f)", what, got, want, tol)
	}
}

func TestDistributions(t *testing.T) {
	g := NewGenerator(Config{})
	var bids, hotAuction, hotBidder, hotChannel, nonHotWithID, nonHot float64
	var auctions, hotSeller float64
	var decades [6]float64
	var categories [5]int
	var sizes [3]float64
	var paddedBids, paddedBidSize float64
	var counts [3]float64
	hotNames := map[string]bool{"Google": true, "Facebook": true, "Baidu": true, "Apple": true}
	for n := int64(0); n < testEvents; n++ {
		e := g.Event(n)
		counts[e.Type]++
		switch e.Type {
		case TypePerson:
			p := e.Person
			sizes[TypePerson] += float64(2*8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State) + len(p.Extra))
			if !strings.Contains("az ca id or wa wy", p.State) || len(p.State) != 2 {
				t.Fatalf("event %d: state %q", n, p.State)
			}
		case TypeAuction:
			a := e.Auction
			sizes[TypeAuction] += float64(7*8 + len(a.ItemName) + len(a.Description) + len(a.Extra))
			if a.Category < 10 || a.Category > 14 {
				t.Fatalf("event %d: category %d", n, a.Category)
			}
			categories[a.Category-10]++
			if a.Reserve <= a.InitialBid || a.InitialBid < 100 {
				t.Fatalf("event %d: initial_bid %d reserve %d", n, a.InitialBid, a.Reserve)
			}
			if a.DateTime != g.EventTime(n) {
				t.Fatalf("event %d: date_time %d; want %d", n, a.DateTime, g.EventTime(n))
			}
			// 1 ms + [0, 2·horizon), horizon = 1666 events · 100 µs.
			if d := a.Expires - a.DateTime; d < 1000 || d >= 1000+2*166_600 {
				t.Fatalf("event %d: expires %d µs after date_time", n, d)
			}
			if n >= 100_000 {
				auctions++
				if a.Seller == FirstPersonID+lastPerson(n)/hotBatch*hotBatch {
					hotSeller++
				}
			}
		case TypeBid:
			b := e.Bid
			base := 4*8 + len(b.Channel) + len(b.URL)
			sizes[TypeBid] += float64(base + len(b.Extra))
			if base >= 100 && b.Extra != "" {
				t.Fatalf("event %d: bid of %d bytes padded with %d more", n, base, len(b.Extra))
			}
			if base < 100 {
				paddedBids++
				paddedBidSize += float64(base + len(b.Extra))
			}
			if b.Price < 100 || b.Price > 100_000_000 || b.Price%100 != 0 {
				t.Fatalf("event %d: price %d", n, b.Price)
			}
			decades[min(5, int(math.Floor(math.Log10(float64(b.Price/100)))))]++
			if !strings.HasPrefix(b.URL, "https://www.nexmark.com/") || strings.Count(b.URL, "/") != 6 {
				t.Fatalf("event %d: url %q", n, b.URL)
			}
			if hotNames[b.Channel] {
				hotChannel++
			} else {
				nonHot++
				if strings.Contains(b.URL, "&channel_id=") {
					nonHotWithID++
				}
			}
			if n >= 100_000 { // past the warm-up where windows are not yet full
				bids++
				if b.Auction == FirstAuctionID+lastAuction(n)/hotBatch*hotBatch {
					hotAuction++
				}
				if b.Bidder == FirstPersonID+lastPerson(n)/hotBatch*hotBatch+1 {
					hotBidder++
				}
			}
		}
	}
	// A non-hot pick can land on the hot id by chance (1 in 111 auctions,
	// 1 in 1010 people), which the tolerances cover.
	within(t, "hot auction fraction of bids", hotAuction/bids, 0.5, 0.01)
	within(t, "hot bidder fraction of bids", hotBidder/bids, 0.75, 0.01)
	within(t, "hot seller fraction of auctions", hotSeller/auctions, 0.75, 0.01)
	within(t, "hot channel fraction of bids", hotChannel/counts[TypeBid], 0.5, 0.01)
	within(t, "channel_id fraction of non-hot bids", nonHotWithID/nonHot, 0.9, 0.01)
	// Decade d holds prices 100·[10^d, 10^(d+1)); rounding 10^(6u) to an
	// integer moves [10^(d+1) - 0.5, 10^(d+1)) up a decade, so decade 0
	// holds a little less than 1/6 and decade 1 a little more.
	for d, c := range decades {
		lo := math.Max(1, math.Pow(10, float64(d))-0.5)
		hi := math.Pow(10, float64(d+1)) - 0.5
		if d == 5 {
			hi = 1e6
		}
		want := (math.Log10(hi) - math.Log10(lo)) / 6
		within(t, "price decade 10^"+string(rune('0'+d))+" fraction", c/counts[TypeBid], want, 0.002)
		within(t, "  ... differs from 1/6 by", c/counts[TypeBid]-1.0/6, 0, 0.005)
	}
	for c, k := range categories {
		within(t, "category "+string(rune('0'+c)), float64(k)/counts[TypeAuction], 0.2, 0.01)
	}
	within(t, "average person size", sizes[TypePerson]/counts[TypePerson], 200, 2)
	within(t, "average auction size", sizes[TypeAuction]/counts[TypeAuction], 500, 5)
	// Bids whose channel and URL already reach 100 bytes (non-hot channels
	// with a channel_id) get no extra, so the bid average sits above the
	// target (see doc.go); the bids that can be padded average 100.
	within(t, "average size of paddable bids", paddedBidSize/paddedBids, 100, 1)
	within(t, "fraction of paddable bids", paddedBids/counts[TypeBid], 0.55, 0.01)
	within(t, "average bid size", sizes[TypeBid]/counts[TypeBid], 108, 1)
}

func TestEventTime(t *testing.T) {
	base := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	g := NewGenerator(Config{BaseTime: base})
	if got, want := g.EventTime(0), base.UnixMicro(); got != want {
		t.Fatalf("EventTime(0) = %d; want %d", got, want)
	}
	if got, want := g.EventTime(12345), base.UnixMicro()+12345*100; got != want {
		t.Fatalf("EventTime(12345) = %d; want %d (100 µs per event at 10,000/s)", got, want)
	}
	g3 := NewGenerator(Config{BaseTime: base, EventRate: 3})
	if got, want := g3.EventTime(2), base.UnixMicro()+666_666; got != want {
		t.Fatalf("rate 3: EventTime(2) = %d; want %d", got, want)
	}
	if got := g3.EventTime(math.MaxInt64); got != math.MaxInt64 {
		t.Fatalf("EventTime(max) = %d; want saturation", got)
	}
	// Rows of a split are produced in increasing date_time.
	r, _ := g.NewReader(TypeBid, 1, 3, StartPosition(1))
	rows := r.Next(nil, 500)
	for i := 1; i < len(rows); i++ {
		if rows[i][5].Int() <= rows[i-1][5].Int() {
			t.Fatalf("row %d date_time %d not after %d", i, rows[i][5].Int(), rows[i-1][5].Int())
		}
	}
}

func rowsEqual(a, b types.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind() != b[i].Kind() || !types.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestDeterminism(t *testing.T) {
	g1 := NewGenerator(Config{})
	g2 := NewGenerator(Config{})
	for _, n := range []int64{0, 1, 2, 3, 4, 49, 50, 12345, 999_999, 1 << 40} {
		if a, b := g1.Event(n), g2.Event(n); a != b {
			t.Fatalf("Event(%d) differs between generators:\n%+v\n%+v", n, a, b)
		}
		if a, b := g1.Event(n), g1.Event(n); a != b {
			t.Fatalf("Event(%d) differs between calls", n)
		}
	}
	// Config() round-trips: a generator rebuilt from it is the same stream.
	for _, cfg := range []Config{{}, {PersonIDLead: -1, AvgBidBytes: -1, EventRate: 7}} {
		a := NewGenerator(cfg)
		b := NewGenerator(a.Config())
		if a.Config() != b.Config() {
			t.Fatalf("Config not idempotent: %+v vs %+v", a.Config(), b.Config())
		}
		for n := int64(0); n < 2000; n++ {
			if a.Event(n) != b.Event(n) {
				t.Fatalf("event %d differs after Config round trip", n)
			}
		}
	}
	// A different seed gives a different stream.
	g3 := NewGenerator(Config{Seed: 7})
	same := 0
	for n := int64(4); n < 1004; n++ {
		if g1.Event(n) == g3.Event(n) {
			same++
		}
	}
	if same > 10 {
		t.Fatalf("seed 7 reproduced %d of 1000 events of seed 0", same)
	}
}

// TestSplitsUnionIsSequential: for several split counts, the rows of all
// splits (read in uneven chunks, with a restart from a saved position)
// are exactly the sequential rows, each once.
func TestSplitsUnionIsSequential(t *testing.T) {
	const events = 60_000
	g := NewGenerator(Config{MaxEvents: events})
	for tt := TypePerson; tt <= TypeBid; tt++ {
		seq, next := g.AppendRows(nil, tt, 0, 1, math.MaxInt32)
		if int64(len(seq)) != g.Count(tt) || next != g.Count(tt) {
			t.Fatalf("%v: sequential got %d rows (next %d); want %d", tt, len(seq), next, g.Count(tt))
		}
		for k, row := range seq {
			if want := g.Row(EventID(tt, int64(k))); !rowsEqual(row, want) {
				t.Fatalf("%v ordinal %d: AppendRows %v; Row %v", tt, k, row, want)
			}
		}
		for _, splits := range []int{1, 2, 3, 7, 50} {
			seen := make([]bool, len(seq))
			for s := range splits {
				r, err := g.NewReader(tt, s, splits, StartPosition(s))
				if err != nil {
					t.Fatal(err)
				}
				chunk := 1 + s
				for i := 0; !r.Done(); i++ {
					pos := r.Position()
					var rows []types.Row
					if i%2 == 0 {
						rows = r.Next(nil, chunk)
					} else {
						rows = make([]types.Row, chunk)
						for j := range rows {
							rows[j] = make(types.Row, len(tt.Columns()))
						}
						rows = rows[:r.Fill(rows)]
					}
					for j, row := range rows {
						k := pos + int64(j*splits)
						if seen[k] {
							t.Fatalf("%v splits=%d: ordinal %d produced twice", tt, splits, k)
						}
						seen[k] = true
						if !rowsEqual(row, seq[k]) {
							t.Fatalf("%v splits=%d split %d: ordinal %d = %v; want %v", tt, splits, s, k, row, seq[k])
						}
					}
					if i == 3 { // restart from the saved position, as recovery does
						r, err = g.NewReader(tt, s, splits, r.Position())
						if err != nil {
							t.Fatal(err)
						}
					}
					chunk = chunk%97 + 13
				}
			}
			for k, ok := range seen {
				if !ok {
					t.Fatalf("%v splits=%d: ordinal %d never produced", tt, splits, k)
				}
			}
		}
	}
}

func TestRowLayout(t *testing.T) {
	g := NewGenerator(Config{})
	for tt := TypePerson; tt <= TypeBid; tt++ {
		rows, _ := g.AppendRows(nil, tt, 0, 1, 3)
		cols := Columns(tt.String())
		for _, row := range rows {
			if len(row) != len(cols) {
				t.Fatalf("%v: row has %d datums; want %d", tt, len(row), len(cols))
			}
			for i, c := range cols {
				if row[i].Kind() != c.Type.Kind {
					t.Fatalf("%v column %s: datum kind %v; want %v", tt, c.Name, row[i].Kind(), c.Type.Kind)
				}
			}
		}
	}
	if Columns("Bid")[0].Name != "auction" || Columns("nope") != nil {
		t.Fatal("Columns by name")
	}
	if _, err := g.NewReader(TypeBid, 1, 3, 2); err == nil {
		t.Fatal("NewReader accepted a position of another split")
	}
	if _, err := g.NewReader(TypeBid, 3, 3, 3); err == nil {
		t.Fatal("NewReader accepted split 3 of 3")
	}
}

func TestParseOptions(t *testing.T) {
	cfg, tt, err := ParseOptions(map[string]string{
		"connector":                   "nexmark",
		"nexmark.table.type":          "Bid",
		"nexmark.split.num":           "4",
		"nexmark.event.num":           "1000000",
		"nexmark.max.chunk.size":      "256",
		"nexmark.min.event.gap.in.ns": "0",
		"NEXMARK.EVENT.RATE":          "5000",
		"nexmark.base.time":           "1700000000000",
		"nexmark.person.id.lead":      "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	if tt != TypeBid || cfg.SplitNum != 4 || cfg.MaxEvents != 1_000_000 || cfg.MaxChunkSize != 256 ||
		cfg.MinEventGap != 0 || cfg.EventRate != 5000 || !cfg.BaseTime.Equal(time.UnixMilli(1700000000000)) ||
		cfg.PersonIDLead != -1 || cfg.AuctionIDLead != DefaultAuctionIDLead {
		t.Fatalf("parsed %+v, %v", cfg, tt)
	}
	// The parsed config survives NewGenerator: lead 0 means no bidder or
	// seller beyond the newest person (except the hot bidder, see
	// TestReferencesExist).
	g := NewGenerator(cfg)
	if g.Config().PersonIDLead != -1 || g.personLead != 0 || g.auctionLead != DefaultAuctionIDLead {
		t.Fatalf("generator from parsed config: %+v", g.Config())
	}
	for n := int64(0); n < 100_000; n++ {
		if e := g.Event(n); e.Type == TypeAuction && e.Auction.Seller > FirstPersonID+lastPerson(n) {
			t.Fatalf("lead 0: event %d seller %d ahead of newest person", n, e.Auction.Seller)
		}
	}
	cfg, _, err = ParseOptions(map[string]string{"nexmark.table.type": "person"})
	if err != nil || cfg.MinEventGap != DefaultMinEventGap || cfg.EventRate != DefaultEventRate ||
		cfg.SplitNum != 1 || cfg.MaxChunkSize != 1024 || cfg.MaxEvents != 0 {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	bad := []struct {
		opts map[string]string
		want string // in the message
		code string
	}{
		{map[string]string{}, `"nexmark.table.type" is required`, sqlerr.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bids"}, `"nexmark.table.type"`, sqlerr.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.split.num": "0"}, `"nexmark.split.num"`, sqlerr.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.event.num": "x"}, `"nexmark.event.num"`, sqlerr.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.min.event.gap.in.ns": "-1"}, `"nexmark.min.event.gap.in.ns"`, sqlerr.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.max.chunk.size": "0"}, `"nexmark.max.chunk.size"`, sqlerr.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.base.time": "yesterday"}, `"nexmark.base.time"`, sqlerr.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.splits": "2"}, `unknown nexmark option "nexmark.splits"`, sqlerr.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.use.real.time": "true"}, `"nexmark.use.real.time"`, sqlerr.FeatureNotSupported},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.first.event.rate": "10", "nexmark.next.event.rate": "20"}, `"nexmark.next.event.rate"`, sqlerr.InvalidParameterValue},
	}
	for _, c := range bad {
		_, _, err := ParseOptions(c.opts)
		var se *sqlerr.Error
		if err == nil || !errors.As(err, &se) || se.Code != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseOptions(%v) = %v; want %s error mentioning %s", c.opts, err, c.code, c.want)
		}
	}
}

func benchRows(b *testing.B, tt TableType, reuse bool) {
	g := NewGenerator(Config{})
	const chunk = 1024
	rows := make([]types.Row, chunk)
	for i := range rows {
		rows[i] = make(types.Row, len(tt.Columns()))
	}
	var next int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += chunk {
		if reuse {
			_, next = g.FillRows(tt, next, 1, rows)
		} else {
			_, next = g.AppendRows(rows[:0], tt, next, 1, chunk)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkFillBidRows(b *testing.B)     { benchRows(b, TypeBid, true) }
func BenchmarkAppendBidRows(b *testing.B)   { benchRows(b, TypeBid, false) }
func BenchmarkFillAuctionRows(b *testing.B) { benchRows(b, TypeAuction, true) }
func BenchmarkFillPersonRows(b *testing.B)  { benchRows(b, TypePerson, true) }

func BenchmarkEvent(b *testing.B) {
	g := NewGenerator(Config{})
	b.ReportAllocs()
	var sink int64
	for i := 0; i < b.N; i++ {
		e := g.Event(int64(i))
		sink += e.DateTime()
	}
	_ = sink
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// TestConcurrentUse: one Generator shared by goroutines (as parallel
// splits share it) gives the same rows as sequential use; run with -race.
func TestConcurrentUse(t *testing.T) {
	g := NewGenerator(Config{MaxEvents: 20_000})
	want, _ := g.AppendRows(nil, TypeBid, 0, 1, int(g.Count(TypeBid)))
	const splits = 4
	got := make([][]types.Row, splits)
	done := make(chan error, splits)
	for s := range splits {
		go func() {
			r, err := g.NewReader(TypeBid, s, splits, StartPosition(s))
			if err == nil {
				for !r.Done() {
					got[s] = r.Next(got[s], 100)
				}
			}
			done <- err
		}()
	}
	for range splits {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for s := range splits {
		for j, row := range got[s] {
			if k := s + splits*j; !rowsEqual(row, want[k]) {
				t.Fatalf("split %d row %d: %v; want %v", s, k, row, want[k])
			}
		}
	}
}

// TestPriceMatchesExp: the table-based price equals round(10^(6u))·100
// computed with math.Exp, except possibly where 10^(6u) is within a
// rounding error of a .5 tie.
func TestPriceMatchesExp(t *testing.T) {
	r := newRNG(1, 2, 3)
	mismatches := 0
	for range 1_000_000 {
		r2 := r
		got := price(&r)
		u := float64(r2.next()>>11) * 0x1p-53
		exact := math.Pow(10, 6*u)
		want := int64(math.Round(exact)) * 100
		if got != want {
			if frac := exact - math.Floor(exact); math.Abs(frac-0.5) > 1e-6 {
				t.Fatalf("u=%v: price %d; want %d (10^(6u) = %v)", u, got, want, exact)
			}
			mismatches++
		}
	}
	if mismatches > 5 {
		t.Fatalf("%d near-tie mismatches in 1e6 draws", mismatches)
	}
	tab := pow10Frac()
	if tab[0] != 1 || math.Abs(tab[2048]-math.Sqrt(10)) > 1e-15 || math.Abs(tab[4095]-math.Pow(10, 4095.0/4096)) > 1e-14 {
		t.Fatalf("table: T[0]=%v T[2048]=%v T[4095]=%v", tab[0], tab[2048], tab[4095])
	}
}

func TestNextChunkAndWatermark(t *testing.T) {
	g := NewGenerator(Config{MaxEvents: 5000})
	r, _ := g.NewReader(TypeAuction, 0, 2, StartPosition(0))
	var c types.Chunk
	total := 0
	for !r.Done() {
		wm := r.EventTimeAt(r.Position())
		before := c.Len()
		n := r.NextChunk(&c, 7)
		if n == 0 || c.Len() != before+n || len(c.Ops) != c.Len() {
			t.Fatalf("NextChunk appended %d; chunk has %d rows, %d ops", n, c.Len(), len(c.Ops))
		}
		for _, row := range c.Rows[before:] {
			if row[5].Int() < wm {
				t.Fatalf("date_time %d below the watermark %d", row[5].Int(), wm)
			}
		}
		total += n
	}
	for _, op := range c.Ops {
		if op != types.OpInsert {
			t.Fatalf("op %v; want insert", op)
		}
	}
	if want := (g.Count(TypeAuction) + 1) / 2; int64(total) != want {
		t.Fatalf("split 0 of 2 produced %d auctions; want %d", total, want)
	}
}
