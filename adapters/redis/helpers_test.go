package redis_test

import (
	goredis "github.com/redis/go-redis/v9"
)

// unreachable is a client config nothing listens on: wiring tests prove
// constructors never dial.
func unreachable() *goredis.UniversalOptions {
	return &goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}}
}
