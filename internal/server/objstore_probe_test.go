package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/s3test"
)

// TestOpenRefusesUnusableObjectStore: a misconfigured object store is
// reported when the server starts, naming the store, instead of at the
// first checkpoint large enough to upload an SST. Before the probe, a
// server pointed at an http endpoint with secure=true (the default) started,
// acknowledged small writes (inlined in the metastore) and then failed
// every large epoch.
func TestOpenRefusesUnusableObjectStore(t *testing.T) {
	s3 := s3test.Start(t)
	s3.SetEnv(t)
	bucket := s3.NewBucket(t)
	good := s3.URL(bucket, "probe")
	for _, tc := range []struct{ name, url string }{
		{"https to an http endpoint", strings.Replace(good, "secure=false", "secure=true", 1)},
		{"missing bucket", strings.Replace(good, "s3://"+bucket+"/", "s3://no-such-bucket/", 1)},
		{"closed port", "s3://" + bucket + "/x?endpoint=127.0.0.1:1&secure=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			s, err := Open(context.Background(), Config{DataDir: t.TempDir(), ObjectStoreURL: tc.url, ObjectStoreWait: 300 * time.Millisecond})
			if err == nil {
				s.Close()
				t.Fatalf("Open with object store %s succeeded", tc.url)
			}
			if !strings.Contains(err.Error(), "object store") || !strings.Contains(err.Error(), "not usable") {
				t.Errorf("error does not name the object store: %v", err)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("Open took %v to give up", d)
			}
		})
	}
	s, err := Open(context.Background(), Config{DataDir: t.TempDir(), ObjectStoreURL: good})
	if err != nil {
		t.Fatalf("Open with a working S3 store: %v", err)
	}
	s.Close()
}
