package service

import (
	"context"
	"testing"
)

// Tests are not judged (they lose the tenant on purpose to assert the
// refusal), and their package variant must not report orders.go twice.
func TestUnbound(t *testing.T) {
	var s Service
	if s.Hits != nil {
		_, _ = s.Hits.Add(context.Background(), "reads", 1)
	}
}
