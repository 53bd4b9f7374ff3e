package redis

import (
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// clusterReload is how often a cluster client the adapter builds (Connect,
// the routed default Open) re-reads the slot map. go-redis re-reads it at
// once on MOVED, but a master that died answers nothing, and its default
// interval is a minute: that long, calls for the dead master's slots would
// go on failing after its replica took over. One CLUSTER SLOTS per client
// every two seconds, and only while calls are made, is cheap.
const clusterReload = 2 * time.Second

// isCluster reports whether o builds a cluster client, as
// goredis.NewUniversalClient decides.
func isCluster(o *goredis.UniversalOptions) bool {
	return o.MasterName == "" && (len(o.Addrs) > 1 || o.IsClusterMode)
}

// newClient is goredis.NewUniversalClient with clusterReload on a cluster
// client.
func newClient(o *goredis.UniversalOptions) goredis.UniversalClient {
	if isCluster(o) {
		co := o.Cluster()
		co.ClusterStateReloadInterval = clusterReload
		return goredis.NewClusterClient(co)
	}
	return goredis.NewUniversalClient(o)
}
