// Package integration holds the tests that need in-process test servers
// (kfake for the Kafka protocol, FerretDB for the MongoDB wire protocol).
// It is a module of its own so that those servers and their dependencies
// never enter the library's go.mod or import graph.
package integration
