package redis

// ClusterSlot is clusterSlot, for the cluster tests to check against the
// server's CLUSTER KEYSLOT.
var ClusterSlot = clusterSlot

// WrapNodeDial sets the wrapper of the dialer behind every node gate of a
// routed cluster client, until the returned function restores it.
func WrapNodeDial(w func(dialFunc) dialFunc) (restore func()) {
	old := wrapNodeDial
	wrapNodeDial = w
	return func() { wrapNodeDial = old }
}

// FamilyOf is familyOf: the key family a raw key belongs to.
func FamilyOf(key string) (family string, ok bool) {
	f, _, ok := familyOf(key)
	return f, ok
}
