package nexmark

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// Option names accepted by ParseOptions (RisingWave's spelling where
// RisingWave has the option).
const (
	OptTableType        = "nexmark.table.type"          // person | auction | bid (required)
	OptEventNum         = "nexmark.event.num"           // events of all kinds; default unbounded
	OptMaxChunkSize     = "nexmark.max.chunk.size"      // rows per chunk; default 1024
	OptMinEventGapNs    = "nexmark.min.event.gap.in.ns" // wall-clock ns between rows of a split; default 100000, 0 = unthrottled
	OptSplitNum         = "nexmark.split.num"           // parallel splits; default 1
	OptEventRate        = "nexmark.event.rate"          // event-time events/s of the whole stream; default 10000
	OptFirstEventRate   = "nexmark.first.event.rate"    // alias of nexmark.event.rate
	OptNextEventRate    = "nexmark.next.event.rate"     // must equal the first rate (no rate shapes)
	OptBaseTime         = "nexmark.base.time"           // ms since the epoch, or an RFC 3339 timestamp
	OptSeed             = "nexmark.seed"                // Runnel extension: stream variant
	OptUseRealTime      = "nexmark.use.real.time"       // only 'false' is supported
	OptActivePeople     = "nexmark.active.people"
	OptInFlightAuctions = "nexmark.in.flight.auctions"
	OptPersonIDLead     = "nexmark.person.id.lead"
	OptAuctionIDLead    = "nexmark.auction.id.lead"
	OptHotAuctionRatio  = "nexmark.hot.auction.ratio"
	OptHotBidderRatio   = "nexmark.hot.bidder.ratio"
	OptHotSellerRatio   = "nexmark.hot.seller.ratio"
	OptHotChannelRatio  = "nexmark.hot.channel.ratio"
	OptNumCategories    = "nexmark.num.categories"
	OptAvgPersonBytes   = "nexmark.avg.person.byte.size"
	OptAvgAuctionBytes  = "nexmark.avg.auction.byte.size"
	OptAvgBidBytes      = "nexmark.avg.bid.byte.size"
)

// ParseOptions reads the WITH options of a nexmark source. Keys are
// matched case-insensitively; "connector" is ignored (the caller chose this
// package by it); any other unknown key is an error. Errors are
// *sqlerr.Error (22023 invalid_parameter_value, or 0A000 for
// nexmark.use.real.time = true) naming the option.
//
// Absent options take the defaults of Config, except that
// nexmark.min.event.gap.in.ns defaults to 100000 (10,000 rows per second
// per split, as RisingWave does); benchmarks pass '0'.
func ParseOptions(opts map[string]string) (Config, TableType, error) {
	cfg := Config{MinEventGap: DefaultMinEventGap}
	var tt TableType
	haveType := false
	firstRate, nextRate := int64(0), int64(0)

	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the first bad option deterministically
	for _, key := range keys {
		val := strings.TrimSpace(opts[key])
		name := strings.ToLower(strings.TrimSpace(key))
		var err error
		intOpt := func(dst *int, lo int64) {
			var v int64
			if v, err = parseInt(name, val, lo); err == nil {
				*dst = int(v)
			}
		}
		// Options where 0 is meaningful are stored as -1 ("none") in Config.
		zeroOK := func(dst *int) {
			intOpt(dst, 0)
			if err == nil && *dst == 0 {
				*dst = -1
			}
		}
		switch name {
		case "connector":
		case OptTableType:
			t, ok := ParseTableType(val)
			if !ok {
				err = badValue(name, val, "one of person, auction, bid")
			}
			tt, haveType = t, ok
		case OptEventNum:
			cfg.MaxEvents, err = parseInt(name, val, 1)
		case OptMaxChunkSize:
			intOpt(&cfg.MaxChunkSize, 1)
		case OptMinEventGapNs:
			var v int64
			if v, err = parseInt(name, val, 0); err == nil {
				cfg.MinEventGap = time.Duration(v)
			}
		case OptSplitNum:
			intOpt(&cfg.SplitNum, 1)
		case OptEventRate, OptFirstEventRate:
			var v int64
			if v, err = parseInt(name, val, 1); err == nil {
				if firstRate != 0 && firstRate != v {
					err = sqlerr.Errorf(sqlerr.InvalidParameterValue,
						"options %q and %q disagree", OptEventRate, OptFirstEventRate)
				}
				firstRate = v
			}
		case OptNextEventRate:
			nextRate, err = parseInt(name, val, 1)
		case OptBaseTime:
			cfg.BaseTime, err = parseBaseTime(name, val)
		case OptSeed:
			cfg.Seed, err = strconv.ParseUint(val, 10, 64)
			if err != nil {
				err = badValue(name, val, "an unsigned 64-bit integer")
			}
		case OptUseRealTime:
			switch strings.ToLower(val) {
			case "false", "f", "off", "0", "no":
			case "true", "t", "on", "1", "yes":
				err = sqlerr.Errorf(sqlerr.FeatureNotSupported,
					"option %q = true is not supported: nexmark event times are a pure function of the event id", name)
			default:
				err = badValue(name, val, "a boolean")
			}
		case OptActivePeople:
			intOpt(&cfg.ActivePeople, 1)
		case OptInFlightAuctions:
			intOpt(&cfg.InFlightAuctions, 1)
		case OptPersonIDLead:
			zeroOK(&cfg.PersonIDLead)
		case OptAuctionIDLead:
			zeroOK(&cfg.AuctionIDLead)
		case OptHotAuctionRatio:
			intOpt(&cfg.HotAuctionRatio, 1)
		case OptHotBidderRatio:
			intOpt(&cfg.HotBidderRatio, 1)
		case OptHotSellerRatio:
			intOpt(&cfg.HotSellerRatio, 1)
		case OptHotChannelRatio:
			intOpt(&cfg.HotChannelRatio, 1)
		case OptNumCategories:
			intOpt(&cfg.NumCategories, 1)
		case OptAvgPersonBytes:
			zeroOK(&cfg.AvgPersonBytes)
		case OptAvgAuctionBytes:
			zeroOK(&cfg.AvgAuctionBytes)
		case OptAvgBidBytes:
			zeroOK(&cfg.AvgBidBytes)
		default:
			err = sqlerr.Errorf(sqlerr.InvalidParameterValue, "unknown nexmark option %q", key)
		}
		if err != nil {
			return Config{}, 0, err
		}
	}
	if !haveType {
		return Config{}, 0, sqlerr.Errorf(sqlerr.InvalidParameterValue,
			"option %q is required (one of person, auction, bid)", OptTableType)
	}
	if nextRate != 0 && firstRate != 0 && nextRate != firstRate {
		return Config{}, 0, sqlerr.Errorf(sqlerr.InvalidParameterValue,
			"option %q must equal %q: varying event rates are not supported", OptNextEventRate, OptFirstEventRate)
	}
	if firstRate == 0 {
		firstRate = nextRate
	}
	if firstRate > 1_000_000_000 {
		return Config{}, 0, badValue(OptEventRate, strconv.FormatInt(firstRate, 10), "at most 1000000000")
	}
	cfg.EventRate = int(firstRate)
	return cfg.withDefaults(), tt, nil
}

const maxOptionInt = 1 << 40 // far beyond any sensible setting; keeps int conversions safe

func parseInt(name, val string, lo int64) (int64, error) {
	v, err := strconv.ParseInt(val, 10, 64)
	if err != nil || v < lo {
		want := "a positive integer"
		if lo == 0 {
			want = "a non-negative integer"
		}
		return 0, badValue(name, val, want)
	}
	if v > maxOptionInt && name != OptEventNum {
		return 0, badValue(name, val, fmt.Sprintf("at most %d", int64(maxOptionInt)))
	}
	return v, nil
}

func parseBaseTime(name, val string) (time.Time, error) {
	if ms, err := strconv.ParseInt(val, 10, 64); err == nil {
		if ms < 0 || ms > 253402300799999 { // year 9999
			return time.Time{}, badValue(name, val, "milliseconds since 1970-01-01 up to year 9999")
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, val)
	if err != nil || t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, badValue(name, val, "milliseconds since the epoch or an RFC 3339 timestamp")
	}
	return t.UTC(), nil
}

func badValue(name, val, want string) error {
	return sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid value %q for option %q: want %s", val, name, want)
}
