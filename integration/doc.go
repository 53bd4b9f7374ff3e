// Package integration holds the tests that need in-process test servers
// (FerretDB for the MongoDB wire protocol; kfake where a test needs many
// Kafka clusters) or the Kafka client stack, and the MongoDB telemetry
// pairs, which need FerretDB and the OpenTelemetry SDK (through tenantotel)
// together. It is a module of its own so that those servers and their dependencies never
// enter the library's go.mod or import graph.
package integration
