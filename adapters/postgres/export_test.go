package postgres

// CachedStatementSets is how many per-(tenant, route) statement sets c
// holds, for the scale tests.
func CachedStatementSets(c *Client) int { return c.stmts.len() }
