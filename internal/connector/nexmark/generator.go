package nexmark

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultBaseTime is the date_time of event 0 when Config.BaseTime is zero:
// 2015-07-15 00:00:00 UTC, the base time of the original Nexmark suite. A
// fixed default keeps a source reproducible across restarts and recovery;
// pass nexmark.base.time to start elsewhere.
var DefaultBaseTime = time.Date(2015, 7, 15, 0, 0, 0, 0, time.UTC)

// Defaults of the generator rules (NEXMARK.md "Generator rules").
const (
	DefaultEventRate        = 10_000 // events per second of event time
	DefaultActivePeople     = 1000
	DefaultInFlightAuctions = 100
	DefaultPersonIDLead     = 10
	DefaultAuctionIDLead    = 10
	DefaultHotAuctionRatio  = 2 // hot with probability 1 - 1/2
	DefaultHotBidderRatio   = 4 // hot with probability 1 - 1/4
	DefaultHotSellerRatio   = 4 // hot with probability 1 - 1/4
	DefaultHotChannelRatio  = 2 // hot with probability 1 - 1/2
	DefaultNumCategories    = 5
	DefaultAvgPersonBytes   = 200
	DefaultAvgAuctionBytes  = 500
	DefaultAvgBidBytes      = 100
	DefaultMaxChunkSize     = 1024
	DefaultSplitNum         = 1
	// DefaultMinEventGap is what ParseOptions uses when
	// nexmark.min.event.gap.in.ns is absent (RisingWave's default: 100 µs,
	// i.e. at most 10,000 rows per second per split). The zero Config means
	// no throttle.
	DefaultMinEventGap = 100 * time.Microsecond

	numChannels    = 10_000
	numHotChannels = 4
)

// Config configures a Generator. Zero tuning fields take the defaults
// above; for the fields where zero is a meaningful value (the id leads and
// the average sizes) a negative value asks for zero.
type Config struct {
	// EventRate is the rate of the whole event stream, in events per
	// second of event time (all splits and all three kinds together):
	// date_time(n) = BaseTime + n·1e6/EventRate µs. It decides how much
	// event time a run covers and so what falls into each window.
	EventRate int
	// BaseTime is the date_time of event 0 (zero: DefaultBaseTime).
	BaseTime time.Time
	// MaxEvents bounds the stream to event ids [0, MaxEvents); <= 0 means
	// unbounded. It counts events of all kinds: a bid table of a stream of
	// 1,000,000 events has 920,000 rows.
	MaxEvents int64
	// Seed selects a different, equally reproducible stream.
	Seed uint64

	ActivePeople     int // a random person is one of the last ActivePeople
	InFlightAuctions int // a random auction is one of the last InFlightAuctions
	PersonIDLead     int // ... or up to this many person ids ahead of the newest
	AuctionIDLead    int // ... or up to this many auction ids ahead of the newest
	HotAuctionRatio  int
	HotBidderRatio   int
	HotSellerRatio   int
	HotChannelRatio  int
	NumCategories    int
	AvgPersonBytes   int
	AvgAuctionBytes  int
	AvgBidBytes      int

	// Settings for a source executor; the generator itself ignores them.
	SplitNum     int           // parallel splits (nexmark.split.num)
	MaxChunkSize int           // rows per chunk (nexmark.max.chunk.size)
	MinEventGap  time.Duration // wall-clock gap between rows of a split; 0: unthrottled
}

// orDefault fills a field where zero is meaningful: 0 takes the default
// and a negative value (meaning "none") is kept, so that withDefaults is
// idempotent; the generator clamps negatives to zero where it uses them.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.EventRate <= 0 {
		c.EventRate = DefaultEventRate
	}
	if c.BaseTime.IsZero() {
		c.BaseTime = DefaultBaseTime
	}
	pos := func(v, def int) int {
		if v <= 0 {
			return def
		}
		return v
	}
	c.ActivePeople = pos(c.ActivePeople, DefaultActivePeople)
	c.InFlightAuctions = pos(c.InFlightAuctions, DefaultInFlightAuctions)
	c.HotAuctionRatio = pos(c.HotAuctionRatio, DefaultHotAuctionRatio)
	c.HotBidderRatio = pos(c.HotBidderRatio, DefaultHotBidderRatio)
	c.HotSellerRatio = pos(c.HotSellerRatio, DefaultHotSellerRatio)
	c.HotChannelRatio = pos(c.HotChannelRatio, DefaultHotChannelRatio)
	c.NumCategories = pos(c.NumCategories, DefaultNumCategories)
	c.PersonIDLead = orDefault(c.PersonIDLead, DefaultPersonIDLead)
	c.AuctionIDLead = orDefault(c.AuctionIDLead, DefaultAuctionIDLead)
	c.AvgPersonBytes = orDefault(c.AvgPersonBytes, DefaultAvgPersonBytes)
	c.AvgAuctionBytes = orDefault(c.AvgAuctionBytes, DefaultAvgAuctionBytes)
	c.AvgBidBytes = orDefault(c.AvgBidBytes, DefaultAvgBidBytes)
	c.SplitNum = pos(c.SplitNum, DefaultSplitNum)
	c.MaxChunkSize = pos(c.MaxChunkSize, DefaultMaxChunkSize)
	if c.MinEventGap < 0 {
		c.MinEventGap = 0
	}
	return c
}

// Generator produces Nexmark events. It holds only immutable tables, so
// one Generator may be used from any number of goroutines.
type Generator struct {
	cfg    Config
	baseUs int64
	rate   uint64
	// horizonEvents is how many events an auction's expiry horizon spans:
	// the events it takes for InFlightAuctions new auctions to appear
	// (100·50/3 = 1,666 by default).
	horizonEvents int64
	personLead    int64 // Config.PersonIDLead, negative ("none") clamped to 0
	auctionLead   int64
	pad           string // pseudo-random letters that random strings are cut from
	ch            *channelTable
	limit         [3]int64 // per-table ordinal bound from MaxEvents; -1: none
}

// NewGenerator returns a generator for cfg (zero fields take defaults).
func NewGenerator(cfg Config) *Generator {
	cfg = cfg.withDefaults()
	g := &Generator{
		cfg:           cfg,
		baseUs:        cfg.BaseTime.UnixMicro(),
		rate:          uint64(cfg.EventRate),
		horizonEvents: int64(cfg.InFlightAuctions) * totalProportion / auctionProportion,
		personLead:    int64(max(0, cfg.PersonIDLead)),
		auctionLead:   int64(max(0, cfg.AuctionIDLead)),
		ch:            channels(),
	}
	// Cut random strings from a pad at least twice as long as the longest
	// extra we can ask for, so offsets stay spread over many positions.
	padLen := 1 << 16
	for _, avg := range []int{cfg.AvgPersonBytes, cfg.AvgAuctionBytes, cfg.AvgBidBytes} {
		padLen = max(padLen, 4*avg)
	}
	g.pad = makePad(cfg.Seed, padLen)
	for t := TypePerson; t <= TypeBid; t++ {
		g.limit[t] = -1
		if cfg.MaxEvents > 0 {
			g.limit[t] = countBelow(t, cfg.MaxEvents)
		}
	}
	return g
}

// Config returns the configuration in use, defaults filled in (a lead or
// average size of "none" reads as -1).
func (g *Generator) Config() Config { return g.cfg }

// Count returns how many rows table t has (-1: unbounded).
func (g *Generator) Count(t TableType) int64 { return g.limit[t] }

// EventTime returns date_time of event n in microseconds since the epoch:
// BaseTime + floor(n·1e6/EventRate). It saturates instead of overflowing.
func (g *Generator) EventTime(n int64) int64 {
	hi, lo := bits.Mul64(uint64(n), 1_000_000)
	if hi >= g.rate {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, g.rate)
	if q > uint64(math.MaxInt64-g.baseUs) {
		return math.MaxInt64
	}
	return g.baseUs + int64(q)
}

// Event returns event n (n >= 0). It is a pure function of n and the
// configuration.
func (g *Generator) Event(n int64) Event {
	e := Event{ID: n, Type: TypeOf(n)}
	switch e.Type {
	case TypePerson:
		e.Person = g.person(n)
	case TypeAuction:
		e.Auction = g.auction(n)
	default:
		e.Bid = g.bid(n)
	}
	return e
}

// nextPerson picks a random existing person (0-based index) at a time
// when lp is the newest: one of the last ActivePeople, or up to
// PersonIDLead ids ahead of lp.
func (g *Generator) nextPerson(r *rng, lp int64) int64 {
	num := lp + 1
	active := min(num, int64(g.cfg.ActivePeople))
	return num - active + int64(r.intn(uint64(active+g.personLead)))
}

// nextAuction picks a random existing auction (0-based index) when la is
// the newest: one of the last InFlightAuctions, or up to AuctionIDLead
// ids ahead of la.
func (g *Generator) nextAuction(r *rng, la int64) int64 {
	lo := max(la-int64(g.cfg.InFlightAuctions), 0)
	return lo + int64(r.intn(uint64(la-lo+1+g.auctionLead)))
}

// hot reports a hot key: true with probability 1 - 1/ratio.
func hot(r *rng, ratio int) bool { return r.intn(uint64(ratio)) > 0 }

// randString returns a string of lowercase letters with a length uniform
// in [lo, hi], cut from the pad (no allocation).
func (g *Generator) randString(r *rng, lo, hi int) string {
	n := lo + int(r.intn(uint64(hi-lo+1)))
	off := int(r.intn(uint64(len(g.pad) - n + 1)))
	return g.pad[off : off+n]
}

// extra pads an event whose other columns take size bytes (8 per bigint
// or timestamp, the byte length of each varchar) towards target: its
// length is uniform in [d - d/5, d + d/5] for d = target - size, so the
// kind's average size is target. An event already at or above target
// gets no padding.
func (g *Generator) extra(r *rng, size, target int) string {
	d := target - size
	if d <= 0 {
		return ""
	}
	return g.randString(r, d-d/5, d+d/5)
}

func (g *Generator) person(n int64) Person {
	r := newRNG(g.cfg.Seed, saltEvent, uint64(n))
	p := Person{ID: FirstPersonID + lastPerson(n), DateTime: g.EventTime(n)}
	p.Name = personNames[r.intn(uint64(len(personNames)))]
	p.EmailAddress = g.randString(&r, 3, 9) + "@" + g.randString(&r, 3, 7) + ".com"
	p.CreditCard = creditCard(&r)
	p.City = cities[r.intn(uint64(len(cities)))]
	p.State = states[r.intn(uint64(len(states)))]
	size := 2*8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State)
	p.Extra = g.extra(&r, size, g.cfg.AvgPersonBytes)
	return p
}

// creditCard is 16 random digits in four groups: "1234 5678 9012 3456".
func creditCard(r *rng) string {
	var b [19]byte
	v := r.intn(1e16)
	for i := 18; i >= 0; i-- {
		if i%5 == 4 {
			b[i] = ' '
			continue
		}
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[:])
}

func (g *Generator) auction(n int64) Auction {
	r := newRNG(g.cfg.Seed, saltEvent, uint64(n))
	t := g.EventTime(n)
	a := Auction{ID: FirstAuctionID + lastAuction(n), DateTime: t}
	a.ItemName = g.randString(&r, 6, 20)
	a.Description = g.randString(&r, 20, 100)
	a.InitialBid = price(&r)
	a.Reserve = a.InitialBid + price(&r)
	// Expiry: 1 ms + uniform [0, 2·horizon), horizon being the event time
	// that InFlightAuctions new auctions take to appear.
	horizon := g.EventTime(n+g.horizonEvents) - t
	a.Expires = t + 1000
	if horizon > 0 {
		a.Expires += int64(r.intn(uint64(2 * horizon)))
	}
	lp := lastPerson(n)
	if hot(&r, g.cfg.HotSellerRatio) {
		a.Seller = FirstPersonID + lp/hotBatch*hotBatch
	} else {
		a.Seller = FirstPersonID + g.nextPerson(&r, lp)
	}
	a.Category = FirstCategoryID + int64(r.intn(uint64(g.cfg.NumCategories)))
	size := 7*8 + len(a.ItemName) + len(a.Description)
	a.Extra = g.extra(&r, size, g.cfg.AvgAuctionBytes)
	return a
}

func (g *Generator) bid(n int64) Bid {
	r := newRNG(g.cfg.Seed, saltEvent, uint64(n))
	b := Bid{DateTime: g.EventTime(n)}
	la := lastAuction(n)
	if hot(&r, g.cfg.HotAuctionRatio) {
		b.Auction = FirstAuctionID + la/hotBatch*hotBatch
	} else {
		b.Auction = FirstAuctionID + g.nextAuction(&r, la)
	}
	lp := lastPerson(n)
	if hot(&r, g.cfg.HotBidderRatio) {
		b.Bidder = FirstPersonID + lp/hotBatch*hotBatch + 1
	} else {
		b.Bidder = FirstPersonID + g.nextPerson(&r, lp)
	}
	b.Price = price(&r)
	if hot(&r, g.cfg.HotChannelRatio) {
		i := r.intn(numHotChannels)
		b.Channel, b.URL = g.ch.hotNames[i], g.ch.hotURLs[i]
	} else {
		i := r.intn(numChannels)
		b.Channel, b.URL = g.ch.names[i], g.ch.urls[i]
	}
	size := 4*8 + len(b.Channel) + len(b.URL)
	b.Extra = g.extra(&r, size, g.cfg.AvgBidBytes)
	return b
}

// makePad returns n pseudo-random lowercase letters.
func makePad(seed uint64, n int) string {
	r := newRNG(seed, saltPad, 0)
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.next()
		for j := i; j < min(i+8, n); j++ {
			b[j] = 'a' + byte((v&0xff)%26)
			v >>= 8
		}
	}
	return string(b)
}

// channelTable holds every channel's name and URL. A channel's URL is a
// function of the channel alone, built once, so a bid costs no string
// building: https://www.nexmark.com/<a>/<b>/<c>/item.htm?query=1, with
// &channel_id=<the channel number bit-reversed as a uint32> appended for
// 9 out of 10 non-hot channels (chosen per channel).
type channelTable struct {
	hotNames [numHotChannels]string
	hotURLs  [numHotChannels]string
	names    [numChannels]string
	urls     [numChannels]string
}

var hotChannelNames = [numHotChannels]string{"Google", "Facebook", "Baidu", "Apple"}

var (
	channelOnce sync.Once
	channelTab  *channelTable
)

func channels() *channelTable {
	channelOnce.Do(func() {
		t := &channelTable{}
		var sb strings.Builder
		for i := range numHotChannels {
			r := newRNG(0, saltChannel, uint64(numChannels+i))
			t.hotNames[i] = hotChannelNames[i]
			t.hotURLs[i] = channelURL(&sb, &r, -1)
		}
		for i := range numChannels {
			r := newRNG(0, saltChannel, uint64(i))
			t.names[i] = "channel-" + strconv.Itoa(i)
			id := -1
			if r.intn(10) != 0 {
				id = i
			}
			t.urls[i] = channelURL(&sb, &r, id)
		}
		channelTab = t
	})
	return channelTab
}

func channelURL(sb *strings.Builder, r *rng, id int) string {
	sb.Reset()
	sb.WriteString("https://www.nexmark.com/")
	for range 3 {
		n := 1 + int(r.intn(5))
		for range n {
			sb.WriteByte('a' + byte(r.intn(26)))
		}
		sb.WriteByte('/')
	}
	sb.WriteString("item.htm?query=1")
	if id >= 0 {
		fmt.Fprintf(sb, "&channel_id=%d", bits.Reverse32(uint32(id)))
	}
	return sb.String()
}

// Person attributes. States are lower case, as RisingWave's Nexmark
// queries compare them (q3: state = 'or' OR state = 'id' OR state = 'ca').
var (
	firstNames = []string{"Alice", "Bruno", "Chloe", "Dmitri", "Elena", "Farid",
		"Greta", "Hiro", "Ines", "Jonas", "Kira", "Luis"}
	lastNames = []string{"Abbott", "Brennan", "Castillo", "Dekker", "Eriksen",
		"Fischer", "Gallo", "Hansen", "Ibarra", "Jovanovic"}
	cities = []string{"Phoenix", "Tucson", "Los Angeles", "San Francisco",
		"Boise", "Portland", "Eugene", "Seattle", "Spokane", "Cheyenne"}
	states = []string{"az", "ca", "id", "or", "wa", "wy"}

	// personNames is every "first last" pair, built once so a person's
	// name costs no allocation.
	personNames = func() []string {
		var out []string
		for _, f := range firstNames {
			for _, l := range lastNames {
				out = append(out, f+" "+l)
			}
		}
		return out
	}()
)
