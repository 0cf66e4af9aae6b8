package kafka

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// FORMAT PLAIN ENCODE PROTOBUF (message = 'pkg.Msg', schema.location =
// 'file:///path/to/descriptor-set'): each record value is one serialized
// message of that type, described by a FileDescriptorSet (`protoc
// --include_imports --descriptor_set_out=...`; the well-known types
// google/protobuf/*.proto may be left out). Fields map to columns by name
// (exact, then case-insensitive); a field whose value does not fit its
// column is NULL.
//
// Types (RisingWave's mapping, where Runnel has the type):
//
//	double → double precision      float → real
//	int32, sint32, sfixed32 → int  int64, sint64, sfixed64 → bigint
//	uint32, fixed32 → bigint       uint64, fixed64 → numeric
//	bool → boolean                 string → varchar
//	bytes → bytea                  enum → varchar (the value's name)
//	google.protobuf.Timestamp → timestamptz
//	message, repeated, map → jsonb (protojson, field names as in the
//	  .proto): Runnel has no struct, array or map types, which RisingWave
//	  uses here
//
// A field without presence (a proto3 scalar) that is unset reads as its
// default (0, "", false); a field with presence that is unset is NULL.

// maxDescriptorBytes bounds the descriptor set file read (I9).
const maxDescriptorBytes = 64 << 20

// readSchemaLocation reads the file a schema.location = 'file://...'
// names (ENCODE PROTOBUF and AVRO), at most max bytes (I9); it returns
// the path for messages.
func readSchemaLocation(encode, location string, max int64) ([]byte, string, error) {
	u, err := url.Parse(location)
	if err != nil || u.Scheme != "file" {
		return nil, "", sqlerr.Errorf(sqlerr.FeatureNotSupported, "kafka ENCODE %s: schema.location %q: only file:// locations are supported", encode, location)
	}
	path := u.Path
	if path == "" {
		path = u.Opaque
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, "", badOption("schema.location", "%v", err)
	}
	if fi.Size() > max {
		return nil, "", badOption("schema.location", "%s is %d bytes, over %d", path, fi.Size(), max)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", badOption("schema.location", "%v", err)
	}
	return b, path, nil
}

// loadMessage reads the descriptor set cfg names and finds its message.
func loadMessage(cfg *Config) (protoreflect.MessageDescriptor, error) {
	b, path, err := readSchemaLocation("PROTOBUF", cfg.ProtoSchema, maxDescriptorBytes)
	if err != nil {
		return nil, err
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return nil, badOption("schema.location", "%s is not a protobuf FileDescriptorSet: %v", path, err)
	}
	// Add the well-known types a set built without --include_imports
	// lacks.
	have := map[string]bool{}
	for _, f := range set.File {
		have[f.GetName()] = true
	}
	for i := 0; i < len(set.File); i++ {
		for _, dep := range set.File[i].Dependency {
			if have[dep] {
				continue
			}
			if fd, err := protoregistry.GlobalFiles.FindFileByPath(dep); err == nil {
				set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
				have[dep] = true
			}
		}
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, badOption("schema.location", "%s: %v", path, err)
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(strings.TrimPrefix(cfg.ProtoMessage, ".")))
	if err != nil {
		return nil, badOption("message", "%q is not in %s", cfg.ProtoMessage, path)
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, badOption("message", "%q is not a message", cfg.ProtoMessage)
	}
	return md, nil
}

// ProtobufColumns are the columns a source or table with ENCODE PROTOBUF
// and no declared columns gets: one per field of the message, typed as
// the table at the top of this file says (and with ENCODE AVRO, one per
// field of the schema: avro.go).
func ProtobufColumns(options map[string]string) ([]connector.Column, error) {
	cfg, err := ParseOptions(connector.Spec{Options: options})
	if err != nil {
		return nil, err
	}
	if cfg.Encode == "avro" {
		return avroColumns(cfg)
	}
	if cfg.Encode != "protobuf" {
		return nil, nil
	}
	md, err := loadMessage(cfg)
	if err != nil {
		return nil, err
	}
	var cols []connector.Column
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		cols = append(cols, connector.Column{Name: string(fd.Name()), Type: protoColumnType(fd)})
	}
	return cols, nil
}

// protoColumnType is the column type a field maps to.
func protoColumnType(fd protoreflect.FieldDescriptor) types.Type {
	if fd.IsList() || fd.IsMap() {
		return types.Jsonb
	}
	switch fd.Kind() {
	case protoreflect.DoubleKind:
		return types.Float64
	case protoreflect.FloatKind:
		return types.Float32
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return types.Int32
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return types.Int64
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return types.Numeric
	case protoreflect.BoolKind:
		return types.Bool
	case protoreflect.StringKind, protoreflect.EnumKind:
		return types.Varchar
	case protoreflect.BytesKind:
		return types.Bytea
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if fd.Message().FullName() == "google.protobuf.Timestamp" {
			return types.Timestamptz
		}
	}
	return types.Jsonb
}

// plainProtobuf decodes FORMAT PLAIN ENCODE PROTOBUF records.
type plainProtobuf struct {
	rb *rowBuilder
	md protoreflect.MessageDescriptor
	// fields[i] is the field feeding column i (nil: none).
	fields []protoreflect.FieldDescriptor
	jp     fastjson.Parser
}

// newProtobuf builds the FORMAT PLAIN ENCODE PROTOBUF decoder.
func newProtobuf(rb *rowBuilder, cfg *Config) (decoder, error) {
	md, err := loadMessage(cfg)
	if err != nil {
		return nil, err
	}
	d := &plainProtobuf{rb: rb, md: md, fields: make([]protoreflect.FieldDescriptor, len(rb.cols))}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		j, ok := rb.byName[string(fd.Name())]
		if !ok {
			j, ok = rb.byName[strings.ToLower(string(fd.Name()))]
		}
		if ok && d.fields[j] == nil {
			d.fields[j] = fd
		}
	}
	return d, nil
}

func (d *plainProtobuf) decode(r *kgo.Record, out *types.Chunk) (err error) {
	// I9: a record is outside input; whatever the protobuf runtime does
	// with it must not end the process (dynamicpb panics on what it
	// considers misuse).
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("protobuf %s: %v", d.md.FullName(), p)
		}
	}()
	if len(r.Value) > maxRecordBytes {
		return fmt.Errorf("record of %d bytes exceeds %d", len(r.Value), maxRecordBytes)
	}
	m := dynamicpb.NewMessage(d.md)
	if err := proto.Unmarshal(r.Value, m); err != nil {
		return fmt.Errorf("invalid protobuf %s: %v", d.md.FullName(), err)
	}
	row := d.rb.newRow(r)
	for i, fd := range d.fields {
		if fd == nil {
			continue
		}
		if !m.Has(fd) {
			switch {
			case d.rb.cols[i].Type.Kind == types.KindJsonb && fd.IsList():
				row[i] = types.DJsonb("[]")
			case d.rb.cols[i].Type.Kind == types.KindJsonb && fd.IsMap():
				row[i] = types.DJsonb("{}")
			case !fd.HasPresence() && !fd.IsList() && !fd.IsMap():
				row[i] = d.datum(m, fd, d.rb.cols[i].Type) // a proto3 scalar's default
			}
			continue
		}
		row[i] = d.datum(m, fd, d.rb.cols[i].Type)
	}
	out.Append(types.OpInsert, row)
	return nil
}

// datum converts field fd of m to t; NULL when it does not fit.
func (d *plainProtobuf) datum(m protoreflect.Message, fd protoreflect.FieldDescriptor, t types.Type) types.Datum {
	if fd.IsList() || fd.IsMap() {
		return d.jsonField(m, fd, t)
	}
	v := m.Get(fd)
	var text string
	switch fd.Kind() {
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		f := v.Float()
		switch t.Kind {
		case types.KindFloat64:
			return types.DFloat64(f)
		case types.KindFloat32:
			return types.DFloat32(float32(f))
		}
		bits := 64
		if fd.Kind() == protoreflect.FloatKind {
			bits = 32
		}
		text = strconv.FormatFloat(f, 'g', -1, bits)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n := v.Int()
		if t.Kind == types.KindInt64 {
			return types.DInt64(n)
		}
		text = strconv.FormatInt(n, 10)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		text = strconv.FormatUint(v.Uint(), 10)
	case protoreflect.BoolKind:
		if t.Kind != types.KindBool {
			return types.NullDatum
		}
		return types.DBool(v.Bool())
	case protoreflect.StringKind:
		if t.Kind == types.KindBytea {
			return types.DByteaString(v.String())
		}
		text = v.String()
	case protoreflect.BytesKind:
		b := v.Bytes()
		if t.Kind == types.KindBytea {
			return types.DBytea(b)
		}
		if t.Kind != types.KindVarchar || !utf8.Valid(b) {
			return types.NullDatum
		}
		text = string(b)
	case protoreflect.EnumKind:
		n := v.Enum()
		switch t.Kind {
		case types.KindInt16, types.KindInt32, types.KindInt64:
			text = strconv.Itoa(int(n))
		default:
			ev := fd.Enum().Values().ByNumber(n)
			if ev == nil {
				return types.NullDatum
			}
			text = string(ev.Name())
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		sub := v.Message()
		if sub.Descriptor().FullName() == "google.protobuf.Timestamp" && (t.Kind == types.KindTimestamptz || t.Kind == types.KindTimestamp) {
			f := sub.Descriptor().Fields()
			us := sub.Get(f.ByName("seconds")).Int()*1_000_000 + sub.Get(f.ByName("nanos")).Int()/1000
			if t.Kind == types.KindTimestamp {
				return types.DTimestamp(us)
			}
			return types.DTimestamptz(us)
		}
		return d.jsonField(m, fd, t)
	default:
		return types.NullDatum
	}
	if t.Kind == types.KindJsonb {
		return d.jsonField(m, fd, t)
	}
	dt, err := types.ParseText(text, t, nil)
	if err != nil {
		return types.NullDatum
	}
	return dt
}

// jsonField renders field fd of m as jsonb (protojson, the .proto's field
// names); NULL unless t is jsonb.
func (d *plainProtobuf) jsonField(m protoreflect.Message, fd protoreflect.FieldDescriptor, t types.Type) types.Datum {
	if t.Kind != types.KindJsonb {
		return types.NullDatum
	}
	one := dynamicpb.NewMessage(d.md)
	one.Set(fd, m.Get(fd))
	b, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(one)
	if err != nil {
		return types.NullDatum
	}
	v, err := d.jp.ParseBytes(b)
	if err != nil {
		return types.NullDatum
	}
	f := v.Get(string(fd.Name()))
	if f == nil {
		return types.NullDatum
	}
	s, err := types.ParseJsonb(string(f.MarshalTo(nil)))
	if err != nil {
		return types.NullDatum
	}
	return types.DJsonb(s)
}
