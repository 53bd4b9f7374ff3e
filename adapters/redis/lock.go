package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

var (
	// ErrLockHeld: the lock is held by another owner.
	ErrLockHeld = errors.New("redis: lock is held by another owner")
	// ErrNotOwner: the lock expired or is held by someone else, so the
	// caller's token no longer owns it.
	ErrNotOwner = errors.New("redis: not the lock's owner (expired or taken)")
)

// errLockTTL: Redis expires in whole milliseconds, and PEXPIRE 0 would
// delete the lock instead of renewing it.
var errLockTTL = errors.New("redis: a lock needs a TTL of at least a millisecond")

// The owner token is compared on the server, so renew and release are
// atomic with the ownership check.
var (
	releaseScript = goredis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	renewScript   = goredis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
)

// Locks is a lock route: named distributed locks with owner tokens.
// On a tenant-scoped route each tenant has its own lock of every name.
type Locks struct{ route }

// Lease is a held lock. Its methods take the context of the call, so on a
// tenant-scoped route they act on the lock of the tenant bound there.
type Lease struct {
	locks *Locks
	name  string
	token string
}

// Token is the owner token, for handing the lease to another process.
func (l *Lease) Token() string { return l.token }

// Name is the lock's name.
func (l *Lease) Name() string { return l.name }

// Renew extends the lease to ttl from now; ErrNotOwner when it was lost.
func (l *Lease) Renew(ctx context.Context, ttl time.Duration) error {
	return l.locks.Renew(ctx, l.name, l.token, ttl)
}

// Release frees the lock; ErrNotOwner when it was already lost.
func (l *Lease) Release(ctx context.Context) error {
	return l.locks.Release(ctx, l.name, l.token)
}

// Acquire takes the lock for ttl, or returns ErrLockHeld.
func (l *Locks) Acquire(ctx context.Context, name string, ttl time.Duration) (*Lease, error) {
	if ttl < time.Millisecond {
		return nil, errLockTTL
	}
	ctx, cl, k, done, err := l.target(ctx, name)
	if err != nil {
		return nil, err
	}
	defer done()
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(raw[:])
	ok, err := cl.SetNX(ctx, k, token, ttl).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrLockHeld
	}
	return &Lease{locks: l, name: name, token: token}, nil
}

// Renew extends the lock held with token; ErrNotOwner otherwise.
func (l *Locks) Renew(ctx context.Context, name, token string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return errLockTTL
	}
	ctx, cl, k, done, err := l.target(ctx, name)
	if err != nil {
		return err
	}
	defer done()
	n, err := renewScript.Run(ctx, cl, []string{k}, token, ttl.Milliseconds()).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotOwner
	}
	return nil
}

// Release frees the lock held with token; ErrNotOwner otherwise.
func (l *Locks) Release(ctx context.Context, name, token string) error {
	ctx, cl, k, done, err := l.target(ctx, name)
	if err != nil {
		return err
	}
	defer done()
	n, err := releaseScript.Run(ctx, cl, []string{k}, token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotOwner
	}
	return nil
}

// Held reports whether anyone holds the lock.
func (l *Locks) Held(ctx context.Context, name string) (bool, error) {
	ctx, cl, k, done, err := l.target(ctx, name)
	if err != nil {
		return false, err
	}
	defer done()
	n, err := cl.Exists(ctx, k).Result()
	return n > 0, err
}
