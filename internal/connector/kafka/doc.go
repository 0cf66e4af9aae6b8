// Package kafka is the Kafka source connector (connector.External),
// built on franz-go: RisingWave's
//
//	CREATE SOURCE s (...) [INCLUDE key | partition | offset | timestamp | header ['name'] [AS col] ...]
//	WITH (connector = 'kafka', topic = 't', properties.bootstrap.server = 'host:port',
//	      scan.startup.mode = 'earliest' | 'latest', scan.startup.timestamp.millis = ...)
//	FORMAT PLAIN | UPSERT | DEBEZIUM ENCODE JSON | CSV (delimiter, without_header)
//	FORMAT PLAIN ENCODE PROTOBUF (message = 'pkg.Msg', schema.location = 'file:///x.pb')
//
// (protobuf: see protobuf.go for the type mapping; a relation declared
// without columns gets the message's fields, via connector.InferColumns)
//
// and the same on CREATE TABLE (stored; UPSERT and DEBEZIUM need its
// primary key).
//
// Design:
//   - One split per partition (Split.ID and Ordinal: the partition
//     number), so a source's actors share the partitions round-robin and
//     partitions added later are picked up by the executors' relisting.
//   - A split's state is the offset of its next record (8 bytes), kept
//     only in Runnel's checkpoint, committed with the rows (I7). There is
//     no consumer group and nothing is acknowledged to the broker.
//   - Reads are read_committed with the transaction markers kept, so the
//     offset moves past a marker; "caught up" compares the next offset
//     with the broker's last stable offset, never the last record's offset
//   - 1, so a partition ending in a marker does not look unfinished.
//   - A split never read starts where scan.startup.* says, resolved at
//     open to a concrete offset that is checkpointed at once.
//   - JSON is parsed with valyala/fastjson (a parser reused per split;
//     each split stream has its own decoder) and converted field by field
//     straight into the column's datum; fetches ask for up to 8 MiB per
//     partition (fetchPartitionBytes: smaller ones made reads
//     latency-bound, docs/benchmarks.md).
//   - Malformed records (bad JSON/CSV, over 16 MiB, an upsert delete
//     without a key) are skipped and reported (connector.Skipped with
//     partition and offset); a field of the wrong type is NULL.
//   - Connection failures are errors from OpenSplit/Read/Splits, which the
//     executor retries with backoff and shows in rw_catalog.rw_source_stats.
package kafka
