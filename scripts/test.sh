#!/usr/bin/env bash
# The project's test command: go vet and go test -race over every module of
# the workspace (a plain `go test ./...` at the root reaches none of them),
# then a short run of each fuzz target's seed corpus (part of go test).
set -euo pipefail
cd "$(dirname "$0")/.."
# tmux (the TUI's end-to-end test) and Node.js (the real pi agent's); quiet
# when they are present.
scripts/deps.sh
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
# Tests that drive real Node.js programs fail, rather than skip, without them.
export SCV_REQUIRE_NODE=1
# Tests run with an empty HOME: the bash tool runs login shells, and a user
# profile (pyenv, nvm) would make every command slow and can block on its
# locks. The Go caches and settings keep their real places.
for var in GOPATH GOMODCACHE GOCACHE GOENV; do
	export "$var=$(go env "$var")"
done
HOME=$(mktemp -d "${TMPDIR:-/tmp}/scv-test-home.XXXXXX")
export HOME
# The programs the end-to-end tests run (scv, scv-server, scv-tui,
# scv-agents) are built once for the whole run, by the first test binary
# that needs each, into this directory (shared/testkit/bins).
SCV_TEST_BIN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/scv-test-bin.XXXXXX")
export SCV_TEST_BIN_DIR
trap 'rm -rf "$HOME" "$SCV_TEST_BIN_DIR"' EXIT
status=0
for dir in $(scripts/modules.sh); do
	rel=${dir#"$PWD"/}
	echo "== $rel"
	(cd "$dir" && go vet ./... && go test -race -count=1 -timeout 600s ./...) || status=1
done
exit $status
