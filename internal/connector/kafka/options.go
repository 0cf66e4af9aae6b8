package kafka

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Config is a Kafka source's parsed options.
type Config struct {
	Topic   string
	Brokers []string
	// StartMillis, when >= 0, starts a split never read at the first
	// record with a timestamp at or after it (scan.startup.timestamp.millis);
	// otherwise Latest chooses the end or (default) the beginning.
	StartMillis int64
	Latest      bool

	Format, Encode string // "plain" | "upsert" | "debezium"; "json" | "csv" | "protobuf"
	// CSV: Delimiter; WithoutHeader false means a record equal to the
	// column names is a header (skipped).
	Delimiter     rune
	WithoutHeader bool

	// Include maps INCLUDE kinds ("key", "partition", "offset",
	// "timestamp", "header", "header.<name>") to column indices.
	Include map[string]int
	// Protobuf: the message's full name and the descriptor set file.
	ProtoMessage, ProtoSchema string
	// Avro: a schema registry's URL(s) (and basic auth), or a schema
	// file (avro.go).
	AvroRegistry, AvroRegistryUser, AvroRegistryPassword string
	AvroLocation                                         string
	// Security are the client options of the SASL and SSL settings
	// (security.go).
	Security []kgo.Opt
}

func badOption(key, format string, args ...any) error {
	return sqlerr.Errorf(sqlerr.InvalidParameterValue, "kafka option %s: %s", key, fmt.Sprintf(format, args...))
}

// ParseOptions checks a Kafka source's WITH and FORMAT options against its
// columns and key.
func ParseOptions(spec connector.Spec) (*Config, error) {
	o := spec.Options
	cfg := &Config{Topic: o["topic"], StartMillis: -1, Include: map[string]int{}, Delimiter: ','}
	if cfg.Topic == "" {
		return nil, badOption("topic", "is required")
	}
	servers := o["properties.bootstrap.server"]
	if servers == "" {
		servers = o["properties.bootstrap.servers"]
	}
	if servers == "" {
		return nil, badOption("properties.bootstrap.server", "is required (host:port[,host:port...])")
	}
	for _, b := range strings.Split(servers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			cfg.Brokers = append(cfg.Brokers, b)
		}
	}
	sec, err := ClientSecurity("kafka topic "+cfg.Topic, o)
	if err != nil {
		return nil, err
	}
	cfg.Security = sec
	switch m := strings.ToLower(o["scan.startup.mode"]); m {
	case "", "earliest":
	case "latest":
		cfg.Latest = true
	case "timestamp":
	default:
		return nil, badOption("scan.startup.mode", "%q is not earliest or latest", m)
	}
	for _, k := range []string{"scan.startup.timestamp.millis", "scan.startup.timestamp_millis"} {
		if v, ok := o[k]; ok {
			ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || ms < 0 {
				return nil, badOption(k, "%q is not a non-negative integer (milliseconds since the epoch)", v)
			}
			cfg.StartMillis = ms
		}
	}
	if strings.EqualFold(o["scan.startup.mode"], "timestamp") && cfg.StartMillis < 0 {
		return nil, badOption("scan.startup.mode", "'timestamp' needs scan.startup.timestamp.millis")
	}
	if iso, ok := o["properties.isolation.level"]; ok && iso != "read_committed" {
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "kafka option properties.isolation.level: only read_committed is supported")
	}
	cfg.Format, cfg.Encode = o["format"], o["encode"]
	if cfg.Format == "" && cfg.Encode == "" {
		cfg.Format, cfg.Encode = "plain", "json"
	}
	switch cfg.Format + " " + cfg.Encode {
	case "plain json", "upsert json", "debezium json", "plain csv", "plain protobuf", "plain bytes", "plain avro", "upsert avro", "debezium avro":
	default:
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "kafka: FORMAT %s ENCODE %s is not supported (supported: PLAIN JSON, PLAIN CSV, PLAIN PROTOBUF, PLAIN AVRO, PLAIN BYTES, UPSERT JSON, UPSERT AVRO, DEBEZIUM JSON, DEBEZIUM AVRO)",
			strings.ToUpper(cfg.Format), strings.ToUpper(cfg.Encode))
	}
	if (cfg.Format == "upsert" || cfg.Format == "debezium") && len(spec.PK) == 0 {
		return nil, sqlerr.Errorf(sqlerr.InvalidTableDefinition, "FORMAT %s needs a table with a primary key (CREATE TABLE ... PRIMARY KEY), not a source", strings.ToUpper(cfg.Format))
	}
	if cfg.Encode == "csv" {
		if d, ok := o["encode.delimiter"]; ok {
			d = strings.ReplaceAll(d, `\t`, "\t")
			r := []rune(d)
			if len(r) != 1 {
				return nil, badOption("delimiter", "%q is not one character", d)
			}
			cfg.Delimiter = r[0]
		}
		if v, ok := o["encode.without_header"]; ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, badOption("without_header", "%q is not a boolean", v)
			}
			cfg.WithoutHeader = b
		}
	}
	if cfg.Encode == "protobuf" {
		cfg.ProtoMessage, cfg.ProtoSchema = o["encode.message"], o["encode.schema.location"]
		if cfg.ProtoMessage == "" || cfg.ProtoSchema == "" {
			return nil, badOption("ENCODE PROTOBUF", "needs message = '...' and schema.location = 'file://...'")
		}
	}
	if cfg.Encode == "avro" {
		cfg.AvroRegistry, cfg.AvroLocation = o["encode.schema.registry"], o["encode.schema.location"]
		cfg.AvroRegistryUser, cfg.AvroRegistryPassword = o["encode.schema.registry.username"], o["encode.schema.registry.password"]
		if (cfg.AvroRegistry == "") == (cfg.AvroLocation == "") {
			return nil, badOption("ENCODE AVRO", "needs schema.registry = 'http://...' or schema.location = 'file://...'")
		}
	}
	cols := map[string]int{}
	for i, c := range spec.Columns {
		cols[c.Name] = i
	}
	for k, v := range o {
		if !strings.HasPrefix(k, "include.") {
			continue
		}
		i, ok := cols[v]
		if !ok {
			return nil, badOption(k, "column %q does not exist", v)
		}
		cfg.Include[strings.TrimPrefix(k, "include.")] = i
	}
	if cfg.Encode == "bytes" {
		// RisingWave's rule: the payload is one bytea column; INCLUDE
		// columns may sit beside it.
		included := map[int]bool{}
		for _, i := range cfg.Include {
			included[i] = true
		}
		var payload []string
		for i, c := range spec.Columns {
			if !included[i] {
				payload = append(payload, c.Name)
				if c.Type.Kind != types.KindBytea {
					return nil, sqlerr.Errorf(sqlerr.DatatypeMismatch, "ENCODE BYTES: column %q must be bytea, not %s", c.Name, c.Type.Name())
				}
			}
		}
		if len(payload) != 1 {
			return nil, sqlerr.Errorf(sqlerr.InvalidTableDefinition, "ENCODE BYTES needs exactly one bytea column besides INCLUDE columns (got %d)", len(payload))
		}
	}
	return cfg, nil
}
