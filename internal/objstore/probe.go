package objstore

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"
)

// probeKey is the one object Probe writes. It lives outside sst/, which is
// the only prefix the storage engine lists, owns and collects (I1 speaks of
// SST objects); the same key is overwritten by every probe, so a crash
// between its Put and Delete leaves at most this one small object behind.
const probeKey = "runnel-probe"

// Probe checks that the store can be written, read back and deleted from,
// so that a misconfigured store (wrong endpoint, credentials, bucket,
// scheme) is reported when the server starts, not at the first checkpoint
// large enough to upload an SST.
func Probe(ctx context.Context, s Store) error {
	data := []byte("runnel object store probe " + strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := s.Put(ctx, probeKey, data); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	got, err := s.Get(ctx, probeKey)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("read back %d bytes that differ from the %d written", len(got), len(data))
	}
	if err := s.Delete(ctx, probeKey); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

// ProbeUntil runs Probe until it succeeds or wait has passed, backing off
// from 100 ms to 5 s between tries; report is called after each failure
// (for a log line). It returns the last failure.
func ProbeUntil(ctx context.Context, s Store, wait time.Duration, report func(err error, next time.Duration)) error {
	deadline := time.Now().Add(wait)
	backoff := 100 * time.Millisecond
	for {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := Probe(pctx, s)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().Add(backoff).After(deadline) || ctx.Err() != nil {
			return err
		}
		if report != nil {
			report(err, backoff)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return err
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
