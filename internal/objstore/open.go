package objstore

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// Open opens the store a URL names:
//
//	""                        local store in the current directory
//	/path, rel/path           local store rooted at the path
//	file:///abs/path          local store rooted at /abs/path
//	s3://bucket/prefix?endpoint=host:port&region=R&secure=false
//	                          S3-compatible bucket; credentials from
//	                          AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
//
// Opening does not contact an S3 server; the first operation does.
func Open(ctx context.Context, rawURL string) (Store, error) {
	switch {
	case strings.HasPrefix(rawURL, "s3://"):
		cfg, err := ParseS3URL(rawURL)
		if err != nil {
			return nil, err
		}
		return NewS3(cfg)
	case strings.HasPrefix(rawURL, "file://"):
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, fmt.Errorf("objstore: url %q: %w", rawURL, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("objstore: url %q: file URLs name a local path (file:///path), not host %q", rawURL, u.Host)
		}
		return NewLocal(u.Path)
	case strings.Contains(rawURL, "://"):
		return nil, fmt.Errorf("objstore: url %q: unsupported scheme (want a path, file:// or s3://)", rawURL)
	default:
		return NewLocal(rawURL)
	}
}
