package metasrv

import (
	"context"
	"sync"

	"github.com/runneldb/runnel/internal/sysparam"
)

// sysParams caches the stored values (the catalog is the truth).
type sysParams struct {
	mu     sync.Mutex
	values map[string]string
}

// loadSystemParams reads every known parameter from the catalog.
func (s *Service) loadSystemParams(ctx context.Context) error {
	s.params.mu.Lock()
	defer s.params.mu.Unlock()
	s.params.values = map[string]string{}
	for name, p := range sysparam.Params {
		v, ok, err := s.catalog.SystemParam(ctx, name)
		if err != nil {
			return err
		}
		if !ok {
			v = p.Default
		}
		s.params.values[name] = v
	}
	return nil
}

// systemParam returns a parameter's current value.
func (s *Service) systemParam(name string) string {
	s.params.mu.Lock()
	defer s.params.mu.Unlock()
	if v, ok := s.params.values[name]; ok {
		return v
	}
	return sysparam.Params[name].Default
}

// strictConsistency is streaming_strict_consistency (I6: strict fails the
// actor on inconsistent input; non-strict logs and tolerates it).
func (s *Service) strictConsistency() bool {
	return s.systemParam("streaming_strict_consistency") != "false"
}

// setSystemParam stores a parameter's new value (checked by the frontend)
// and caches it.
func (s *Service) setSystemParam(ctx context.Context, name, value string, reset bool, by string) error {
	if err := s.catalog.SetSystemParam(ctx, name, value, reset); err != nil {
		return err
	}
	s.params.mu.Lock()
	if s.params.values == nil {
		s.params.values = map[string]string{}
	}
	s.params.values[name] = value
	s.params.mu.Unlock()
	s.log.Info("system parameter changed", "name", name, "value", value, "by", by)
	return nil
}
