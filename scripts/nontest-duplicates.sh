#!/usr/bin/env bash
# nontest-duplicates lists the repeated code of the library and its
# examples without their tests: it copies every tracked non-test Go file to
# a scratch tree and runs the `duplicates` tool there, so a pair between a
# test and the code it tests does not count.
# usage: scripts/nontest-duplicates.sh [duplicates options, e.g. --most 100]
set -euo pipefail
command -v duplicates >/dev/null || { echo "nontest-duplicates: the duplicates tool is not on PATH" >&2; exit 2; }
root=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
git -C "$root" ls-files -z -- '*.go' ':!:*_test.go' | (cd "$root" && xargs -0 cp --parents -t "$tree")
cd "$tree"
duplicates --seconds 120 "$@"
