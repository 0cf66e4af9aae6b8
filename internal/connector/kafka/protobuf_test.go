package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// orderProto is, as a FileDescriptorProto, what protoc makes of
//
//	syntax = "proto3";
//	package shop;
//	import "google/protobuf/timestamp.proto";
//	message Order {
//	  enum Status { NEW = 0; PAID = 1; }
//	  message Line { string sku = 1; int32 qty = 2; }
//	  int32 id = 1; string name = 2; double price = 3; bool paid = 4;
//	  repeated string tags = 5; Line line = 6; Status status = 7;
//	  uint64 big = 8; bytes raw = 9; google.protobuf.Timestamp ts = 10;
//	  optional int64 opt = 11; float ratio = 12; sint64 delta = 13;
//	}
func orderProto() *descriptorpb.FileDescriptorProto {
	f := func(name string, n int32, typ descriptorpb.FieldDescriptorProto_Type, label descriptorpb.FieldDescriptorProto_Label, typeName string) *descriptorpb.FieldDescriptorProto {
		fd := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: typ.Enum(), Label: label.Enum(), JsonName: proto.String(name)}
		if typeName != "" {
			fd.TypeName = proto.String(typeName)
		}
		return fd
	}
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	optField := f("opt", 11, descriptorpb.FieldDescriptorProto_TYPE_INT64, opt, "")
	optField.Proto3Optional = proto.Bool(true)
	optField.OneofIndex = proto.Int32(0)
	return &descriptorpb.FileDescriptorProto{
		Name:       proto.String("shop/order.proto"),
		Package:    proto.String("shop"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/timestamp.proto"},
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Order"),
			Field: []*descriptorpb.FieldDescriptorProto{
				f("id", 1, descriptorpb.FieldDescriptorProto_TYPE_INT32, opt, ""),
				f("name", 2, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, ""),
				f("price", 3, descriptorpb.FieldDescriptorProto_TYPE_DOUBLE, opt, ""),
				f("paid", 4, descriptorpb.FieldDescriptorProto_TYPE_BOOL, opt, ""),
				f("tags", 5, descriptorpb.FieldDescriptorProto_TYPE_STRING, rep, ""),
				f("line", 6, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, opt, ".shop.Order.Line"),
				f("status", 7, descriptorpb.FieldDescriptorProto_TYPE_ENUM, opt, ".shop.Order.Status"),
				f("big", 8, descriptorpb.FieldDescriptorProto_TYPE_UINT64, opt, ""),
				f("raw", 9, descriptorpb.FieldDescriptorProto_TYPE_BYTES, opt, ""),
				f("ts", 10, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, opt, ".google.protobuf.Timestamp"),
				optField,
				f("ratio", 12, descriptorpb.FieldDescriptorProto_TYPE_FLOAT, opt, ""),
				f("delta", 13, descriptorpb.FieldDescriptorProto_TYPE_SINT64, opt, ""),
			},
			NestedType: []*descriptorpb.DescriptorProto{{
				Name: proto.String("Line"),
				Field: []*descriptorpb.FieldDescriptorProto{
					f("sku", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, ""),
					f("qty", 2, descriptorpb.FieldDescriptorProto_TYPE_INT32, opt, ""),
				},
			}},
			EnumType: []*descriptorpb.EnumDescriptorProto{{
				Name: proto.String("Status"),
				Value: []*descriptorpb.EnumValueDescriptorProto{
					{Name: proto.String("NEW"), Number: proto.Int32(0)},
					{Name: proto.String("PAID"), Number: proto.Int32(1)},
				},
			}},
			OneofDecl: []*descriptorpb.OneofDescriptorProto{{Name: proto.String("_opt")}},
		}},
	}
}

// writeDescriptorSet writes a descriptor set of fdp (without its imports,
// as protoc without --include_imports does) and returns the message
// descriptor of shop.Order.
func writeDescriptorSet(t *testing.T, fdp *descriptorpb.FileDescriptorProto) (string, protoreflect.MessageDescriptor) {
	t.Helper()
	b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fdp}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "order.pb")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	return path, fd.Messages().ByName("Order")
}

// TestKafkaProtobuf: FORMAT PLAIN ENCODE PROTOBUF reads serialized
// messages produced to kfake, with RisingWave's type mapping — declared
// columns (in any order, some fields left out, a field read into another
// type) and columns inferred from the descriptor when none are declared;
// a record that is not the message is skipped and counted.
func TestKafkaProtobuf(t *testing.T) {
	path, md := writeDescriptorSet(t, orderProto())
	b := startBroker(t, 1, "orders")
	msg := func(set func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor)) []byte {
		m := dynamicpb.NewMessage(md)
		set(m, func(n string) protoreflect.FieldDescriptor { return md.Fields().ByName(protoreflect.Name(n)) })
		out, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	full := msg(func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
		m.Set(f("id"), protoreflect.ValueOfInt32(7))
		m.Set(f("name"), protoreflect.ValueOfString("seven"))
		m.Set(f("price"), protoreflect.ValueOfFloat64(12.5))
		m.Set(f("paid"), protoreflect.ValueOfBool(true))
		tags := m.Mutable(f("tags")).List()
		tags.Append(protoreflect.ValueOfString("a"))
		tags.Append(protoreflect.ValueOfString("b"))
		line := m.Mutable(f("line")).Message()
		line.Set(line.Descriptor().Fields().ByName("sku"), protoreflect.ValueOfString("X1"))
		line.Set(line.Descriptor().Fields().ByName("qty"), protoreflect.ValueOfInt32(3))
		m.Set(f("status"), protoreflect.ValueOfEnum(1))
		m.Set(f("big"), protoreflect.ValueOfUint64(18446744073709551615))
		m.Set(f("raw"), protoreflect.ValueOfBytes([]byte{0xde, 0xad}))
		ts := m.Mutable(f("ts")).Message()
		tsv := timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC))
		ts.Set(ts.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(tsv.Seconds))
		ts.Set(ts.Descriptor().Fields().ByName("nanos"), protoreflect.ValueOfInt32(tsv.Nanos))
		m.Set(f("opt"), protoreflect.ValueOfInt64(-4))
		m.Set(f("ratio"), protoreflect.ValueOfFloat32(0.25))
		m.Set(f("delta"), protoreflect.ValueOfInt64(-9))
	})
	empty := msg(func(*dynamicpb.Message, func(string) protoreflect.FieldDescriptor) {})
	b.produce(t, rec("orders", 0, "", string(full)), rec("orders", 0, "", string(empty)), rec("orders", 0, "", "\xff\xff\xff not protobuf"))

	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	with := fmt.Sprintf(`WITH (connector = 'kafka', topic = 'orders', properties.bootstrap.server = '%s')
		FORMAT PLAIN ENCODE PROTOBUF (message = 'shop.Order', schema.location = 'file://%s')`, b.addr, path)
	// Declared columns: a subset, in another order, price read as numeric.
	servertest.Exec(t, conn, `CREATE SOURCE o1 (status VARCHAR, id INT, price NUMERIC, ts TIMESTAMPTZ, tags JSONB, line JSONB, opt BIGINT, Name VARCHAR) `+with)
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW o1_mv AS SELECT id, name, price, status, ts, tags, line, opt FROM o1`)
	waitRows(t, conn, `SELECT * FROM o1_mv ORDER BY id`,
		`0||0|NEW|NULL|[]|NULL|NULL;7|seven|12.5|PAID|2026-01-02 03:04:05.6+00|["a", "b"]|{"qty": 3, "sku": "X1"}|-4`)
	// No columns: inferred from the message.
	servertest.Exec(t, conn, `CREATE TABLE o2 `+with)
	waitRows(t, conn, `SELECT id, name, price, paid, tags, line, status, big, raw, ts, opt, ratio, delta FROM o2 ORDER BY id`,
		`0||0|f|[]|NULL|NEW|0|\x|NULL|NULL|0|0;7|seven|12.5|t|["a", "b"]|{"qty": 3, "sku": "X1"}|PAID|18446744073709551615|\xdead|2026-01-02 03:04:05.6+00|-4|0.25|-9`)
	waitRows(t, conn, `SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'o2' ORDER BY ordinal_position`,
		`id integer;name character varying;price double precision;paid boolean;tags jsonb;line jsonb;status character varying;big numeric;raw bytea;ts timestamp with time zone;opt bigint;ratio real;delta bigint`)
	waitRows(t, conn, `SELECT malformed FROM rw_catalog.rw_source_stats WHERE name = 'o1'`, "1")

	for _, c := range []struct{ sql, code string }{
		{fmt.Sprintf(`CREATE SOURCE bad (id INT) WITH (connector = 'kafka', topic = 'orders', properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE PROTOBUF (message = 'shop.Nope', schema.location = 'file://%s')`, b.addr, path), "22023"},
		{fmt.Sprintf(`CREATE SOURCE bad (id INT) WITH (connector = 'kafka', topic = 'orders', properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE PROTOBUF (message = 'shop.Order', schema.location = 'file:///nonexistent.pb')`, b.addr), "22023"},
		{fmt.Sprintf(`CREATE SOURCE bad (id INT) WITH (connector = 'kafka', topic = 'orders', properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE PROTOBUF (message = 'shop.Order', schema.location = 'http://x/y.pb')`, b.addr), "0A000"},
		{fmt.Sprintf(`CREATE SOURCE bad (id INT) WITH (connector = 'kafka', topic = 'orders', properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE PROTOBUF (message = 'shop.Order')`, b.addr), "22023"},
	} {
		_, err := conn.Exec(context.Background(), c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: %v; want SQLSTATE %s", c.sql, err, c.code)
		}
	}
}
