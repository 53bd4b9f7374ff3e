package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// SkippingSource is a Source that can leave some tenants' rows out of a
// claim: the relay passes it the tenants it has parked, so that a parked
// tenant's rows at the head of the outbox never fill the batch and keep
// every other tenant's rows out of it. The PostgreSQL and MongoDB
// outboxes are SkippingSources; on a plain Source the relay claims the
// parked rows and passes over them.
type SkippingSource interface {
	Source
	ClaimSkipping(ctx context.Context, limit int, skip []tenancy.ID) (Batch, error)
}

// giveUp parks m's tenant after m failed with err and reports whether the
// relay gives up on m: its tenant is gone (Gone), or it failed
// GiveUpAfter times in a row. A row given up on goes to DeadLetter, or is
// dropped; either way it is then marked done and its tenant unparked. A
// dead letter that fails too keeps the row, parked.
func (r *Relay) giveUp(ctx context.Context, m Message, err error) bool {
	wait, fails := r.park.Fail(m.Tenant, time.Now())
	log := func(level slog.Level, msg string, err error, attrs ...any) {
		if r.cfg.OnError != nil {
			r.cfg.OnError(fmt.Errorf("outbox: relay %s: tenant %s event %s: %s: %w", r.cfg.Name, m.Tenant, m.EventID, msg, err))
			return
		}
		args := append([]any{"tenant", m.Tenant.String(), "event", m.EventID}, attrs...)
		r.cfg.Logger.Log(ctx, level, "tenantwire: relay "+msg, append(args, "error", err)...)
	}
	gone := !m.Tenant.IsZero() && r.cfg.Gone != nil && r.cfg.Gone(context.WithoutCancel(ctx), m.Tenant)
	if !gone && (r.cfg.GiveUpAfter <= 0 || fails < r.cfg.GiveUpAfter) {
		log(slog.LevelWarn, "delivery failed; tenant parked", err, "attempts", fails, "wait", wait)
		return false
	}
	why := "failed too often"
	if gone {
		why = "tenant gone"
	}
	if r.cfg.DeadLetter == nil {
		log(slog.LevelError, "gave up on a row; dropped (no DeadLetter)", err, "reason", why, "attempts", fails)
		r.park.Forget(m.Tenant)
		return true
	}
	if derr := r.cfg.DeadLetter.Deliver(tenancy.WithGlobal(ctx), m); derr != nil {
		log(slog.LevelWarn, "dead letter failed; tenant parked", derr, "reason", why, "attempts", fails, "wait", wait)
		return false
	}
	log(slog.LevelWarn, "gave up on a row; dead-lettered", err, "reason", why, "attempts", fails)
	r.park.Forget(m.Tenant)
	return true
}
