#!/usr/bin/env bash
# Runs every fuzz target in the repository (both modules) for the given
# time each. usage: scripts/fuzz.sh 5s
#
# Each package's fuzz-instrumented test binary is built once (go test -c
# -fuzz) and runs each of its targets in turn, as `go test -fuzz` would
# (in the package's directory, with go's fuzz cache): a `go test -fuzz`
# per target would link the binary again for every target.
#
# A run that fails without saving a failing input (the engine's own
# "context deadline exceeded" at the end of a short budget, or a worker lost
# on a loaded machine) is run again, up to twice, and says so; a run
# that saves an input fails, and the saved input is replayed by every later
# `go test`, so a real finding can never be retried away.
set -euo pipefail
budget=${1:-5s}
cd "$(dirname "$0")/.."

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
cache=$(go env GOCACHE)/fuzz

saved() { { find "$1/testdata/fuzz/$2" -type f 2>/dev/null || true; } | wc -l; }

grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' . | xargs -n1 dirname | sort -u | while read -r dir; do
	targets=$(grep -ohE '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' "$dir"/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/' | sort)
	first=$(echo "$targets" | head -n 1)
	test=$bin/$(echo "$dir" | tr '/.' '__').test
	pkg=$(cd "$dir" && go list -f '{{.ImportPath}}' .)
	(cd "$dir" && go test -c -o "$test" -fuzz="^$first\$" .)
	for target in $targets; do
		echo "fuzz: $dir $target ($budget)"
		before=$(saved "$dir" "$target")
		for attempt in 1 2 3; do
			if (cd "$dir" && "$test" -test.run='^$' -test.fuzz="^$target\$" -test.fuzztime="$budget" \
				-test.fuzzcachedir="$cache/$pkg" -test.paniconexit0 -test.timeout=10m </dev/null); then break; fi
			if [ "$(saved "$dir" "$target")" != "$before" ]; then
				echo "fuzz: $dir $target found a failing input (saved under $dir/testdata/fuzz/$target)"
				exit 1
			fi
			if [ "$attempt" = 3 ]; then exit 1; fi
			echo "fuzz: $dir $target failed without a failing input; running it again"
		done
	done
done
