#!/usr/bin/env bash
# Mutation testing of the code that decides or applies a tenant.
# usage: scripts/mutate.sh [package ...]   (default: every target below)
#
# For each package it prints one line on stdout:
#   mutation <package> killed=K lived=L timed_out=T not_covered=N not_viable=V
# and, on stderr, one "lived <file>:<line>:<col> <mutator>" line per
# surviving mutant. The tool's log and JSON report are kept under
# $MUTATE_OUT (default $TMPDIR/tenantwire-mutate).
#
# The tool is installed into a cache, never required by go.mod. Every
# mutant runs its package's whole test suite, so the servers must be up
# (make mutate starts them) and TENANTWIRE_REQUIRE_SERVICES=1 keeps a
# skipped server test from letting a mutant live.
set -euo pipefail
cd "$(dirname "$0")/.."

version=v0.6.0
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tenantwire/gremlins-$version
gremlins=$cache/gremlins
out=${MUTATE_OUT:-${TMPDIR:-/tmp}/tenantwire-mutate}
# The per-mutant timeout is the package's coverage run times this factor.
# That run reuses the build cache while every mutant recompiles and links
# its package, so the factor is large: on a loaded machine a smaller one
# reports slow builds as timed_out.
coefficient=${MUTATE_TIMEOUT_COEFFICIENT:-30}

# In an adapter only the naming and scoping code is mutated: the files
# listed here; a package not listed is mutated whole.
declare -A only=(
	[adapters/redis]="key.go nscache.go"
	[adapters/postgres]="names.go route.go"
	[adapters/mongo]="names.go"
	[adapters/kafka]="topic.go"
	[adapters/neo4j]="cypher.go names.go"
)
# The Redis and PostgreSQL suites are long (real servers, load tests), and
# every mutant would run all of them; their mutants run the tests that
# exercise the mutated files instead (go test -run, through GOFLAGS so that
# the coverage run is narrowed too). A mutant counted killed is killed by
# these tests; one counted lived may still fail another test of the suite.
# A test added to kill a mutant of these files belongs in the list.
declare -A run=(
	[adapters/redis]="^(Fuzz.*|TestKeyLayout|TestUnescape.*|TestTenantNamespace|TestScopeMarkerEveryWiring|TestRoutedKeyCarriesTheTenant|TestKeyOf.*|TestValidNameEdges|TestBoundary.*|TestFailClosed.*|TestRoutedKeysLandOnTheTenantsClient|TestSharedTierIsShared|TestParityTenancyOffAndDefaultTenant|TestNamespaceCache.*|TestTargetAllocations|TestKeyAllocatesOnceAndExactly)$"
	[adapters/postgres]="^(Fuzz.*|TestPrefixBounds|TestStmtCacheBounded|TestRouteBoundaries|TestRoutesFailClosed|TestFailClosed|TestDocumentBoundary.*|TestIdempotencyBoundary|TestInboxBoundary|TestValidNameEdges|TestTenantNamesExact|TestPlaceholders|TestTaggedStatementParts|TestExecOneTellsNoRowFromFailure)$"
)
# Small pure packages first; the slow server-backed suites last.
targets=(tenancy floors modules ownership
	adapters/kafka adapters/mongo adapters/neo4j adapters/redis adapters/postgres
	routing tenanthttp)
[ $# -gt 0 ] && targets=("$@")

if [ ! -x "$gremlins" ]; then
	echo "mutate: installing gremlins $version into $cache" >&2
	GOBIN=$cache go install "github.com/go-gremlins/gremlins/cmd/gremlins@$version"
fi
mkdir -p "$out"

status=0
for pkg in "${targets[@]}"; do
	pkg=${pkg#./}
	pkg=${pkg%/}
	if [ ! -d "$pkg" ]; then
		echo "mutate: no package directory $pkg" >&2
		exit 2
	fi
	excludes=()
	if [ -n "${only[$pkg]:-}" ]; then
		for f in "$pkg"/*.go; do
			f=${f##*/}
			case $f in *_test.go) continue ;; esac
			case " ${only[$pkg]} " in *" $f "*) continue ;; esac
			excludes+=(--exclude-files "^${f//./\\.}\$")
		done
	fi
	name=${pkg//\//_}
	echo "mutate: $pkg${only[$pkg]:+ (${only[$pkg]})}" >&2
	rm -f "$out/$name.json" # gremlins writes none when a package has no mutant
	# -count=1: a cached coverage run would take no time and leave every
	# mutant a timeout too short to build in.
	goflags="${GOFLAGS:-} -count=1"
	[ -n "${run[$pkg]:-}" ] && goflags="$goflags -run=${run[$pkg]}"
	if ! GOFLAGS=$goflags nice -n 19 "$gremlins" unleash "./$pkg" \
		--workers 1 --timeout-coefficient "$coefficient" \
		--invert-logical \
		"${excludes[@]}" \
		--output "$out/$name.json" >"$out/$name.log" 2>&1; then
		echo "mutate: gremlins failed on $pkg; see $out/$name.log" >&2
		tail -n 20 "$out/$name.log" >&2
		status=1
		continue
	fi
	go run scripts/mutatesum.go "$pkg" "$out/$name.json"
done
exit $status
