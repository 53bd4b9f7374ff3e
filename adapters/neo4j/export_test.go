package neo4j

import "time"

// SetClaimWait shortens how long a migrator waits for another one's fresh
// claim; the returned func restores it.
func SetClaimWait(d time.Duration) func() {
	old := claimWait
	claimWait = d
	return func() { claimWait = old }
}
