package redis_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Over the whole package: every worker, heartbeat, subscription and
// client a test started is gone when the tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
