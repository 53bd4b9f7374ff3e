# tenantwire. `make test` does every set-up step itself on a fresh machine.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO ?= go
FUZZTIME ?= 3s
LONG_FUZZTIME ?= 60s
# The Redis Cluster where `make test` runs the Redis adapter's suite a second
# time: yours when TENANTWIRE_REDIS_CLUSTER names one, else the one
# scripts/redis-cluster.sh starts.
ifdef TENANTWIRE_REDIS_CLUSTER
REDIS_CLUSTER ?= $(TENANTWIRE_REDIS_CLUSTER)
endif
REDIS_CLUSTER ?= 127.0.0.1:7100,127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103,127.0.0.1:7104,127.0.0.1:7105

.PHONY: demo test tenantvet prepare checks services deps tidy-check vet fuzz fuzz-short bench soak matrix lint mutate surface

## demo: the quickstart on the embedded memory backend (no server needed)
demo:
	$(GO) run ./examples/quickstart

## test: services, vet, the race-detected suite, and a short fuzz budget
test: prepare
	TENANTWIRE_REQUIRE_SERVICES=1 TENANTWIRE_REDIS_CLUSTER= $(GO) test -race -count=1 ./...
	TENANTWIRE_REQUIRE_SERVICES=1 TENANTWIRE_REDIS_CLUSTER=$(REDIS_CLUSTER) $(GO) test -race -count=1 ./adapters/redis/
	cd integration && TENANTWIRE_REQUIRE_SERVICES=1 $(GO) test -race -count=1 ./...
	cd tenantgrpc && $(GO) test -race -count=1 ./...
	cd tenantotel && TENANTWIRE_REQUIRE_SERVICES=1 $(GO) test -race -count=1 ./...
	cd examples/service && TENANTWIRE_REQUIRE_SERVICES=1 $(GO) test -race -count=1 ./...
	cd tenantvet && $(GO) test -race -count=1 ./...
	$(MAKE) --no-print-directory tenantvet
	$(MAKE) fuzz-short

## tenantvet: the static checks (docs/tenantvet.md) over the examples, which must be clean
tenantvet:
	cd tenantvet && $(GO) build -o $(CURDIR)/bin/tenantvet ./cmd/tenantvet
	bin/tenantvet ./examples/...
	cd examples/service && $(CURDIR)/bin/tenantvet ./...

# The servers start while the modules download and vet compiles: on a
# first run each takes minutes, the one mostly waiting on downloads and
# JVM start-ups, the other on the CPU. services.sh prints each server's
# output whole, so the two barely interleave.
prepare:
	@$(MAKE) --no-print-directory -j2 services checks

# One goal per make, so that -j2 above never runs these side by side.
checks:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory tidy-check
	@$(MAKE) --no-print-directory vet

services:
	scripts/services.sh

# integration/ is a module of its own: in-process test servers (kfake,
# FerretDB) stay out of the library's go.mod and import graph. So is
# tenantgrpc/: only a service that imports the gRPC boundary pulls in gRPC;
# and tenantotel/: the library takes the OpenTelemetry API only, the SDK and
# the Prometheus exporter come with the app that wires tenantotel, as
# examples/service (a module of its own, as an app is) does. tenantvet/
# is too: golang.org/x/tools stays out of the library's go.mod.
NESTED := integration tenantgrpc tenantotel examples/service tenantvet

deps:
	$(GO) mod download
	for m in $(NESTED); do (cd $$m && $(GO) mod download) || exit 1; done

# tidy-check fails when `go mod tidy` would change go.mod or go.sum in any
# module (it prints the diff): run `go mod tidy` there and commit the result.
# It also fails when the library's go.mod names gRPC, the OpenTelemetry SDK
# or exporters, or the Prometheus client.
tidy-check:
	$(GO) mod tidy -diff
	for m in $(NESTED); do (cd $$m && $(GO) mod tidy -diff) || exit 1; done
	! grep -n 'google.golang.org/grpc' go.mod
	! grep -nE 'go.opentelemetry.io/otel/(sdk|exporters)|github.com/prometheus/' go.mod

# -race: vet compiles every dependency as the race-detected tests will, so
# a first run builds the dependency graph once for both, not twice (no
# file of the repository depends on the race build tag).
vet:
	$(GO) vet -race ./...
	for m in $(NESTED); do (cd $$m && $(GO) vet -race ./...) || exit 1; done

fuzz-short:
	scripts/fuzz.sh $(FUZZTIME)

## fuzz: every fuzz target, longer
fuzz:
	scripts/fuzz.sh $(LONG_FUZZTIME)

## bench: the ratio pairs of docs/performance.md (one "ratio <label>-<name> <median> [<lo>, <hi>] n=<rounds>" line each), the
## scale pairs' costs, memory, provisioning throughput and a tenant's whole life at 10,000 tenants ("scale..." lines, the
## "scale lifecycle-..." ones in docs/lifecycle.md's runbook; costs and S/C ratios drawn to docs/img/scale.png,
## scale-ratios.png and concurrency-ratios.png) and allocation benchmarks.
## One package at a time (-p 1): two packages' pairs sharing the cores would measure each other.
bench: services deps
	@(TENANTWIRE_BENCH=1 $(GO) test -p 1 -count=1 -timeout 120m -run '^TestRatio' -v ./... ; \
	  cd integration && TENANTWIRE_BENCH=1 $(GO) test -p 1 -count=1 -timeout 60m -run '^TestRatio' -v ./... ; \
	  cd ../tenantotel && TENANTWIRE_BENCH=1 $(GO) test -p 1 -count=1 -timeout 30m -run '^TestRatio' -v ./...) 2>&1 \
	  | tee /tmp/tenantwire-bench.log | grep -E '^(ratio |scale|--- (FAIL|SKIP)|FAIL)' || true
	@cd integration && $(GO) run ./cmd/scaleplot -in /tmp/tenantwire-bench.log -out ../docs/img/scale.png \
	  -ratios ../docs/img/scale-ratios.png -concurrency ../docs/img/concurrency-ratios.png
	@( $(GO) test -run '^$$' -bench . -benchmem -benchtime=20000x ./tenancy/... ./tenanthttp/... ./ownership/...; \
	  $(GO) test -run '^$$' -bench PlacerAt -benchmem -benchtime=20000x ./modules ) 2>&1 | grep -E '^(Benchmark|ok|FAIL)'

## soak: long concurrent and fault-injection runs against the real servers, and the end-to-end
## multi-tenant soak under faults (integration/soak, its Kafka legs on the three-node cluster of
## scripts/kafka.sh start-cluster, which it starts; SOAK_DURATION=10m to lengthen, docs/reliability.md)
# pipefail: a failing soak fails the target, not only the grep after it.
soak: services deps
	set -o pipefail; TENANTWIRE_SOAK=1 $(GO) test -race -count=1 -run '^TestSoak' -timeout 60m -v ./... 2>&1 | grep -E '^(=== RUN|--- |ok|FAIL|PASS|    )'
	set -o pipefail; cd integration && TENANTWIRE_SOAK=1 $(GO) test -race -count=1 -run '^TestSoak' -timeout 60m -v ./... 2>&1 | grep -E '^(=== RUN|--- |ok|FAIL|PASS|    )'
	set -o pipefail; TENANTWIRE_MOVE_RECORDS=100000 $(GO) test -count=1 -run '^TestMoveUnderLoad$$' -timeout 30m -v ./adapters/postgres/ 2>&1 | grep -E '^(=== RUN|--- |ok|FAIL|PASS|    )'

## mutate: mutation testing of the tenant-deciding code, one "mutation <pkg> killed=K lived=L ..." line each
## (MUTATE_PKGS=tenancy limits it; docs/reliability.md)
mutate: services deps
	TENANTWIRE_REQUIRE_SERVICES=1 scripts/mutate.sh $(MUTATE_PKGS)

## matrix: regenerate docs/tenancy-matrix.md and docs/errors.md
matrix:
	$(GO) run ./cmd/tenantwire matrix --format markdown > docs/tenancy-matrix.md
	$(GO) run ./cmd/tenantwire errors > docs/errors.md

## surface: the library's size and public surface (exported identifiers and fields, non-test
## lines, functions over 80 lines), then its repeated non-test code (needs the duplicates tool)
surface:
	$(GO) run scripts/surface.go .
	scripts/nontest-duplicates.sh --most 40

LINT := $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

lint:
	$(LINT) run ./...
	for m in $(NESTED); do (cd $$m && $(LINT) run --config $(CURDIR)/.golangci.yml ./...) || exit 1; done
