package redis

import (
	"context"
	"errors"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/modules"
)

// incrOnceScript adds ARGV[1] to KEYS[1] unless the operation's marker
// KEYS[2] already exists, and sets the marker in the same atomic step. A
// retry after a lost reply (go-redis retries on a broken connection; a
// handler retries after an error) finds the marker and adds nothing.
var incrOnceScript = goredis.NewScript(`
if redis.call("SET", KEYS[2], "1", "NX", "PX", ARGV[2]) then
  return {redis.call("INCRBY", KEYS[1], ARGV[1]), 1}
end
return {tonumber(redis.call("GET", KEYS[1]) or "0"), 0}`)

// onceKeyPrefix starts every operation marker. "once" is no scope marker
// (those are s, g or letters of "dnt"), so markers never collide with keys.
const onceKeyPrefix = keyPrefix + "once:{"

// onceKey is the marker of operation op on the counter stored at key. The
// counter's full key is the marker's hash tag: full keys hold no brace (user
// keys are escaped, names validated), so the tag is exactly the counter's
// key, both hash to the same cluster slot, and the script's two keys are
// one slot. The tag ends at the first '}', so the encoding is injective.
func onceKey(key, op string) string {
	var b strings.Builder
	b.Grow(len(onceKeyPrefix) + len(key) + 2 + escapedLen(op))
	b.WriteString(onceKeyPrefix)
	b.WriteString(key)
	b.WriteString("}:")
	writeEscaped(&b, op)
	return b.String()
}

// AddOnce adds by to key once per operation id op: a second call with the
// same op (a retry, a redelivered message) adds nothing and reports
// applied=false with the counter's current value. The marker of op lives
// in the same tenant's scope as the counter and expires after remember,
// which must outlast any retry or redelivery of the operation.
func (c *Counter) AddOnce(ctx context.Context, key, op string, by int64, remember time.Duration) (value int64, applied bool, err error) {
	if c.placed != nil {
		f, err := modules.OnPlacement(c.placed, ctx, true, func(in *Counter) (found[int64], error) {
			v, ok, err := in.AddOnce(ctx, key, op, by, remember)
			return found[int64]{v, ok}, err
		})
		return f.v, f.ok, err
	}
	if op == "" {
		return 0, false, errors.New("redis: AddOnce needs an operation id")
	}
	if remember < time.Millisecond {
		return 0, false, errors.New("redis: AddOnce needs remember of at least a millisecond: markers must expire")
	}
	ctx, cl, k, done, err := c.target(ctx, key)
	if err != nil {
		return 0, false, err
	}
	defer done()
	res, err := incrOnceScript.Run(ctx, cl, []string{k, onceKey(k, op)}, by, remember.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, false, err
	}
	if len(res) != 2 {
		return 0, false, errors.New("redis: AddOnce: unexpected script reply")
	}
	return res[0], res[1] == 1, nil
}
