#!/usr/bin/env bash
# Prints SCV's performance figures as medians over repeated runs (Go's
# benchmark harness, summarized by a pinned benchstat):
#   - protocol: encoding an assistant.delta frame, decoding a client frame;
#   - scv-server: one turn of 10,000 streamed deltas over the stdio pipes,
#     start to initialized, resident memory after one session;
#   - scv exec: wall time and peak memory answering a one-line prompt from a
#     local scripted model.
# Usage: scripts/bench.sh [count]   (default 10 runs of each)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
count=${1:-10}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
# Measure the binaries as scripts/build.sh builds them.
export CGO_ENABLED=0

gobin="$root/.cache/bin"
benchstat_version=v0.0.0-20260908200009-22c9c6c9d4da
if [[ ! -e "$gobin/.benchstat-$benchstat_version" ]]; then
	mkdir -p "$gobin"
	(cd "$gobin" && GOWORK=off GOBIN="$gobin" go install "golang.org/x/perf/cmd/benchstat@$benchstat_version")
	touch "$gobin/.benchstat-$benchstat_version"
fi

out="$root/.cache/bench"
mkdir -p "$out"
run() { # module, pattern, file
	(cd "$1" && go test -run '^$' -bench "$2" -benchmem -count "$count" .) | tee "$out/$3.txt" >/dev/null
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%F)"
run shared/protocol 'EncodeAssistantDelta|DecodeClientFrame' protocol
run scv-server 'Turn10kDeltas|StartToInitialized|RSSAfterSession' server
run scv 'Exec' exec
for f in protocol server exec; do
	echo
	"$gobin/benchstat" "$out/$f.txt"
done
