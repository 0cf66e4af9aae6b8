package kafka

import "github.com/runneldb/runnel/internal/sqlerr"

// newProtobuf builds the FORMAT PLAIN ENCODE PROTOBUF decoder.
func newProtobuf(rb *rowBuilder, cfg *Config) (decoder, error) {
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "kafka: ENCODE PROTOBUF is not supported yet")
}
