package main

import (
	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/floors"
)

// Backends is every backend the project ships, in matrix order. Each
// states its own rules; nothing here is written by hand.
var Backends = []floors.Backend{
	memory.Rules,
}
