#!/usr/bin/env bash
# Runs every fuzz target in the repository (both modules) for the given
# time each. usage: scripts/fuzz.sh 5s
#
# A run that fails without saving a failing input (the engine's own
# "context deadline exceeded" at the end of a short budget, or a worker lost
# on a loaded machine) is run again, up to twice, and says so; a run
# that saves an input fails, and the saved input is replayed by every later
# `go test`, so a real finding can never be retried away.
set -euo pipefail
budget=${1:-5s}
cd "$(dirname "$0")/.."

saved() { { find "$1/testdata/fuzz/$2" -type f 2>/dev/null || true; } | wc -l; }

fuzz() { (cd "$1" && go test -run='^$' -fuzz="^$2\$" -fuzztime="$budget" . </dev/null); }

grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' . | sort | while read -r file; do
	dir=$(dirname "$file")
	for target in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | sed 's/^func //'); do
		echo "fuzz: $dir $target ($budget)"
		before=$(saved "$dir" "$target")
		for attempt in 1 2 3; do
			if fuzz "$dir" "$target"; then break; fi
			if [ "$(saved "$dir" "$target")" != "$before" ]; then
				echo "fuzz: $dir $target found a failing input (saved under $dir/testdata/fuzz/$target)"
				exit 1
			fi
			if [ "$attempt" = 3 ]; then exit 1; fi
			echo "fuzz: $dir $target failed without a failing input; running it again"
		done
	done
done
