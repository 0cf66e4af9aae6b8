package s3test

import (
	"context"
	"errors"
	"testing"

	"github.com/runneldb/runnel/internal/objstore"
)

func TestStartPutGetViaURL(t *testing.T) {
	s := Start(t)
	bucket := s.NewBucket(t)
	s.SetEnv(t)
	ctx := context.Background()
	st, err := objstore.Open(ctx, s.URL(bucket, "pre"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "a/b", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, "a/b")
	if err != nil || string(got) != "hello" {
		t.Fatalf("Get = %q, %v; want hello", got, err)
	}
	if _, err := st.Get(ctx, "missing"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Get missing: %v; want ErrNotFound", err)
	}
	pid := s.PID()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "after-stop", nil); err == nil {
		t.Fatalf("Put succeeded after the server (pid %d) was stopped", pid)
	}
}
