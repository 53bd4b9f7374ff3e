package testsvc

import "testing"

// Neo4jServer is a Bolt endpoint of a test Neo4j server. scripts/neo4j.sh
// runs four, with auth disabled, so User and Password are empty unless the
// environment names a server that needs them.
type Neo4jServer struct {
	URI, User, Password string
}

// Neo4j is the first test Neo4j server (NEO4J_URI, default
// bolt://127.0.0.1:7687; NEO4J_USER and NEO4J_PASSWORD when it needs them).
func Neo4j(t testing.TB) Neo4jServer {
	t.Helper()
	return neo4jAt(t, "NEO4J_URI", "bolt://127.0.0.1:7687")
}

// Neo4jSecond is a second, separate Neo4j server (TENANTWIRE_NEO4J_URI_2,
// default bolt://127.0.0.1:7688, same credentials): the dedicated tier's
// tests put two tenants on two servers.
func Neo4jSecond(t testing.TB) Neo4jServer {
	t.Helper()
	return neo4jAt(t, "TENANTWIRE_NEO4J_URI_2", "bolt://127.0.0.1:7688")
}

// Neo4jOwn is two more servers (TENANTWIRE_NEO4J_URI_3 and _4, defaults
// bolt://127.0.0.1:7689 and :7690) that only the dedicated archive tests
// use: a dedicated tenant's export and offboard take its database whole,
// which on Community is the server's one database.
func Neo4jOwn(t testing.TB) (Neo4jServer, Neo4jServer) {
	t.Helper()
	return neo4jAt(t, "TENANTWIRE_NEO4J_URI_3", "bolt://127.0.0.1:7689"), neo4jAt(t, "TENANTWIRE_NEO4J_URI_4", "bolt://127.0.0.1:7690")
}

func neo4jAt(t testing.TB, key, def string) Neo4jServer {
	t.Helper()
	s := Neo4jServer{URI: env(key, def), User: env("NEO4J_USER", ""), Password: env("NEO4J_PASSWORD", "")}
	reachable(t, "Neo4j ("+key+")", s.URI)
	return s
}
