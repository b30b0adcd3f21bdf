#!/usr/bin/env bash
# The project's lint command: for every module of the workspace, gofmt -l
# (any file it lists is a failure), go mod tidy (GOWORK=off), go vet and
# staticcheck. staticcheck is
# pinned and installed into .cache/bin (git-ignored) on first use.
#
# Usage: scripts/lint.sh [module-dir...]   (default: every module)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

staticcheck_version=v0.8.2
gobin="$root/.cache/bin"
staticcheck="$gobin/staticcheck"
stamp="$gobin/.staticcheck-$staticcheck_version"

if [[ ! -x $staticcheck || ! -e $stamp ]]; then
	echo "== installing staticcheck $staticcheck_version into .cache/bin"
	mkdir -p "$gobin"
	# Outside the workspace, so the tool's dependencies are its own.
	(cd "$gobin" && GOWORK=off GOBIN="$gobin" GOFLAGS=-buildvcs=false \
		go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version")
	rm -f "$gobin"/.staticcheck-*
	touch "$stamp"
fi

if [[ $# -gt 0 ]]; then
	modules=("$@")
else
	mapfile -t modules < <(scripts/modules.sh)
fi

status=0
for dir in "${modules[@]}"; do
	dir=$(cd "$dir" && pwd)
	rel=${dir#"$root"/}
	echo "== $rel"
	unformatted=$(cd "$dir" && gofmt -l .)
	if [[ -n $unformatted ]]; then
		echo "gofmt: these files need gofmt -w:"
		sed 's/^/  /' <<<"$unformatted"
		status=1
	fi
	# Each module's go.mod and go.sum must stand without the workspace
	# (GOWORK=off), as they do for anyone who builds one module alone.
	if ! tidy=$(cd "$dir" && GOWORK=off go mod tidy -diff 2>&1); then
		echo "go mod tidy: go.mod or go.sum of $rel is not tidy; run (cd $rel && GOWORK=off go mod tidy):"
		sed 's/^/  /' <<<"$tidy"
		status=1
	fi
	(cd "$dir" && go vet ./...) || status=1
	(cd "$dir" && "$staticcheck" ./...) || status=1
done
if [[ $status -ne 0 ]]; then
	echo "lint: FAILED"
else
	echo "lint: ok"
fi
exit $status
