package sinktest

import (
	"testing"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
