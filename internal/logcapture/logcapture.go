// Package logcapture records slog records for tests that check what a
// background worker logged and under which keys.
package logcapture

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Handler keeps every record with its attributes flattened to strings,
// those attached by Logger.With included.
type Handler struct {
	mu      *sync.Mutex
	records *[]Record
	attrs   []slog.Attr
}

// Record is one logged record.
type Record struct {
	Message string
	Attrs   map[string]string
}

// New returns a logger writing to a fresh Handler, and the Handler.
func New() (*slog.Logger, *Handler) {
	h := &Handler{mu: &sync.Mutex{}, records: &[]Record{}}
	return slog.New(h), h
}

func (h *Handler) Enabled(context.Context, slog.Level) bool { return true }

func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	rec := Record{Message: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { rec.Attrs[a.Key] = a.Value.String(); return true })
	h.mu.Lock()
	*h.records = append(*h.records, rec)
	h.mu.Unlock()
	return nil
}

func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{mu: h.mu, records: h.records, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

// WithGroup is not used by the workers; groups are flattened away.
func (h *Handler) WithGroup(string) slog.Handler { return h }

// Wait returns the first record for which match is true, polling until
// timeout; ok is false when none arrived.
func (h *Handler) Wait(timeout time.Duration, match func(Record) bool) (Record, bool) {
	deadline := time.Now().Add(timeout)
	for {
		h.mu.Lock()
		for _, r := range *h.records {
			if match(r) {
				h.mu.Unlock()
				return r, true
			}
		}
		h.mu.Unlock()
		if time.Now().After(deadline) {
			return Record{}, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
