#!/usr/bin/env bash
# Runs every fuzz target in the module for the given time each.
# usage: scripts/fuzz.sh 5s
set -euo pipefail
budget=${1:-5s}
cd "$(dirname "$0")/.."
grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' . | sort | while read -r file; do
	dir=$(dirname "$file")
	for target in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | sed 's/^func //'); do
		echo "fuzz: $dir $target ($budget)"
		(cd "$dir" && go test -run='^$' -fuzz="^${target}\$" -fuzztime="$budget" . </dev/null)
	done
done
