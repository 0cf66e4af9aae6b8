package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config names an S3-compatible bucket (AWS S3, MinIO, versitygw, …).
type S3Config struct {
	// Endpoint is host:port without scheme; empty means AWS
	// (s3.amazonaws.com).
	Endpoint string
	Bucket   string
	// Prefix is prepended to every key ("runnel/" → "runnel/sst/1.sst");
	// a missing trailing slash is added.
	Prefix string
	Region string
	// Secure selects https.
	Secure    bool
	AccessKey string
	SecretKey string
}

// S3 is a Store on an S3-compatible bucket. A single PUT is atomic on every
// S3 implementation, and so is a multipart upload at completion, so Put
// needs no temp-and-rename.
type S3 struct {
	client *minio.Client
	cfg    S3Config
}

// NewS3 connects to the bucket described by cfg. It does not contact the
// server; the first call does.
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, fmt.Errorf("objstore: s3: bucket name is empty")
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = "s3.amazonaws.com"
	}
	if cfg.Prefix != "" && !strings.HasSuffix(cfg.Prefix, "/") {
		cfg.Prefix += "/"
	}
	if cfg.Prefix != "" {
		if err := ValidateKey(strings.TrimSuffix(cfg.Prefix, "/")); err != nil {
			return nil, fmt.Errorf("objstore: s3 prefix %q: %w", cfg.Prefix, err)
		}
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       cfg.Secure,
		Region:       cfg.Region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("objstore: s3 endpoint %s: %w", cfg.Endpoint, err)
	}
	return &S3{client: client, cfg: cfg}, nil
}

// ParseS3URL parses s3://bucket/prefix?endpoint=host:port&region=R&secure=false.
// Credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, never
// from the URL (URLs end up in logs). secure defaults to true.
func ParseS3URL(raw string) (S3Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return S3Config{}, fmt.Errorf("objstore: s3 url %q: %w", raw, err)
	}
	if u.Scheme != "s3" {
		return S3Config{}, fmt.Errorf("objstore: s3 url %q: scheme must be s3", raw)
	}
	if u.User != nil {
		return S3Config{}, fmt.Errorf("objstore: s3 url %q: credentials belong in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, not in the URL", u.Redacted())
	}
	q := u.Query()
	cfg := S3Config{
		Bucket:    u.Host,
		Prefix:    strings.TrimPrefix(u.Path, "/"),
		Endpoint:  q.Get("endpoint"),
		Region:    q.Get("region"),
		Secure:    true,
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
	}
	if cfg.Region == "" {
		cfg.Region = os.Getenv("AWS_REGION")
	}
	if s := q.Get("secure"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return S3Config{}, fmt.Errorf("objstore: s3 url %q: secure=%q: %w", raw, s, err)
		}
		cfg.Secure = b
	}
	for k := range q {
		switch k {
		case "endpoint", "region", "secure":
		default:
			return S3Config{}, fmt.Errorf("objstore: s3 url %q: unknown parameter %q (want endpoint, region, secure)", raw, k)
		}
	}
	if cfg.Bucket == "" {
		return S3Config{}, fmt.Errorf("objstore: s3 url %q: no bucket", raw)
	}
	return cfg, nil
}

// Config returns the configuration (with the prefix normalised).
func (s *S3) Config() S3Config { return s.cfg }

func (s *S3) object(key string) string { return s.cfg.Prefix + key }

// Put uploads the object in one request (multipart above minio-go's part
// size, which S3 also publishes atomically).
func (s *S3) Put(ctx context.Context, key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("objstore: put: %w", err)
	}
	_, err := s.client.PutObject(ctx, s.cfg.Bucket, s.object(key), bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return s.wrap("put", key, err)
	}
	return nil
}

// Get reads the whole object.
func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ValidateKey(key); err != nil {
		return nil, fmt.Errorf("objstore: get: %w", err)
	}
	obj, err := s.client.GetObject(ctx, s.cfg.Bucket, s.object(key), minio.GetObjectOptions{})
	if err != nil {
		return nil, s.wrap("get", key, err)
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		return nil, s.wrap("get", key, err)
	}
	return data, nil
}

// GetRange reads length bytes at offset with an HTTP range request.
func (s *S3) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := ValidateKey(key); err != nil {
		return nil, fmt.Errorf("objstore: get: %w", err)
	}
	if offset < 0 || length < 0 {
		return nil, fmt.Errorf("objstore: get %s [%d, +%d): out of range", key, offset, length)
	}
	if length == 0 {
		// HTTP has no empty range; check existence and bounds instead.
		info, err := s.Stat(ctx, key)
		if err != nil {
			return nil, err
		}
		if offset > info.Size {
			return nil, fmt.Errorf("objstore: get %s [%d, +%d): out of range (size %d)", key, offset, length, info.Size)
		}
		return []byte{}, nil
	}
	var opts minio.GetObjectOptions
	if err := opts.SetRange(offset, offset+length-1); err != nil {
		return nil, fmt.Errorf("objstore: get %s [%d, +%d): %w", key, offset, length, err)
	}
	obj, err := s.client.GetObject(ctx, s.cfg.Bucket, s.object(key), opts)
	if err != nil {
		return nil, s.wrap("get", key, err)
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		var er minio.ErrorResponse
		if errors.As(err, &er) && (er.Code == "InvalidRange" || er.StatusCode == http.StatusRequestedRangeNotSatisfiable) {
			return nil, fmt.Errorf("objstore: get %s [%d, +%d): out of range: %w", key, offset, length, err)
		}
		return nil, s.wrap("get", key, err)
	}
	// S3 answers a range that runs past the end with the bytes it has.
	if int64(len(data)) != length {
		return nil, fmt.Errorf("objstore: get %s [%d, +%d): out of range (got %d bytes)", key, offset, length, len(data))
	}
	return data, nil
}

// Stat returns the object's size and modification time.
func (s *S3) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, fmt.Errorf("objstore: stat: %w", err)
	}
	info, err := s.client.StatObject(ctx, s.cfg.Bucket, s.object(key), minio.StatObjectOptions{})
	if err != nil {
		return ObjectInfo{}, s.wrap("stat", key, err)
	}
	return ObjectInfo{Key: key, Size: info.Size, ModTime: info.LastModified}, nil
}

// List returns every object whose key starts with prefix, sorted by key.
func (s *S3) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	var out []ObjectInfo
	for info := range s.client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{
		Prefix:    s.object(prefix),
		Recursive: true,
	}) {
		if info.Err != nil {
			return nil, fmt.Errorf("objstore: list %q in bucket %s: %w", prefix, s.cfg.Bucket, info.Err)
		}
		key := strings.TrimPrefix(info.Key, s.cfg.Prefix)
		if strings.HasSuffix(key, "/") {
			continue // a "directory marker" some servers report; never one of ours
		}
		out = append(out, ObjectInfo{Key: key, Size: info.Size, ModTime: info.LastModified})
	}
	// S3 lists in UTF-8 binary order already; sorting keeps the contract
	// independent of the server.
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Delete removes the object; S3 reports no error for a missing one.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("objstore: delete: %w", err)
	}
	if err := s.client.RemoveObject(ctx, s.cfg.Bucket, s.object(key), minio.RemoveObjectOptions{}); err != nil {
		err = s.wrap("delete", key, err)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	return nil
}

// wrap names the operation and key, and maps "no such key" to ErrNotFound.
func (s *S3) wrap(op, key string, err error) error {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		switch er.Code {
		case "NoSuchKey", "NotFound":
			return fmt.Errorf("objstore: %s %s: %w", op, key, ErrNotFound)
		}
		if er.StatusCode == http.StatusNotFound && er.Code != "NoSuchBucket" {
			return fmt.Errorf("objstore: %s %s: %w", op, key, ErrNotFound)
		}
	}
	return fmt.Errorf("objstore: %s %s (bucket %s): %w", op, key, s.cfg.Bucket, err)
}
