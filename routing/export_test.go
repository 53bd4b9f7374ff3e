package routing

import "time"

// WithClock is cfg with its clock replaced, for the external tests.
func WithClock[C any](cfg Config[C], now func() time.Time) Config[C] {
	cfg.now = now
	return cfg
}
