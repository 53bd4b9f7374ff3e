package redis

// ClusterSlot is clusterSlot, for the cluster tests to check against the
// server's CLUSTER KEYSLOT.
var ClusterSlot = clusterSlot
