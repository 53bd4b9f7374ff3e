package main

import (
	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/floors"
)

// Backends is every backend the project ships, in matrix order. Each
// states its own rules; nothing here is written by hand.
var Backends = []floors.Backend{
	memory.Rules(),
	postgres.Rules(),
	redis.Rules(),
	mongo.Rules(),
	kafka.Rules(),
	neo4j.Rules(),
}
