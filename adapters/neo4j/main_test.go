package neo4j

import (
	"testing"

	"go.uber.org/goleak"
)

// Nothing the adapter starts (routed driver closers included) outlives
// the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
