#!/usr/bin/env bash
# Prints SCV's performance figures as medians over repeated runs (Go's
# benchmark harness, summarized by a pinned benchstat):
#   - protocol: encoding an assistant.delta frame, decoding a client frame;
#   - scv-server: one turn of 10,000 streamed deltas over the stdio pipes,
#     start to initialized, a tool round trip beyond its command,
#     resident memory after one session;
#   - tools: read, write and edit of a 1 MiB file; a bash call of `true`
#     through the tool against spawning `bash -lc true` directly;
#   - sessions: resuming a 2,000-turn session;
#   - scv exec: wall time and peak memory answering a one-line prompt from a
#     local scripted model, and a turn of five sequential bash calls;
#   - the TUI: one keystroke with 10,000 transcript items, one streamed
#     delta at 10 and 10,000 items;
#   - the web: HTML to text at 256 KiB, 1 MiB and 4 MiB, the checking
#     dialer against a plain client, the Responses wire's 10k deltas;
#   - delegated agents: parsing a 50 MB Claude stream-json log, the runner's
#     launch against procgroup and os/exec;
#   - the tool round trip's parts (issue 23): a provider request to a server
#     that writes with Nagle's algorithm on, a process tree record written
#     with and without fsync, the session store's work between
#     session.start and the first model request, and `scv exec` writing a
#     streamed reply to a pipe directly and through its buffer;
#   - end to end (scripts/bench-exec.sh, when the shared bench is there):
#     hello, tools5 and long2000 through `scv exec` against the bench's
#     scripted model, tools5 with a login profile, and a run attached to a
#     daemon against one that spawns its own server.
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
run() { # package dir, pattern, file
	if ! (cd "$1" && go test -run '^$' -bench "$2" -benchmem -count "$count" .) >>"$out/$3.txt" 2>&1; then
		cat "$out/$3.txt" >&2
		echo "bench: $1 failed" >&2
		exit 1
	fi
}
rm -f "$out"/*.txt
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%F)"
run shared/protocol 'EncodeAssistantDelta|DecodeClientFrame' protocol
run scv-server 'Turn10kDeltas|StartToInitialized|ToolRoundTrip|RSSAfterSession|ResumeSession' server
for d in read write edit bash; do
	run scv-server/internal/tools/$d '.' tools
done
run scv-server/internal/sessionstore 'Resume' sessions
run scv-server/internal/loop 'BuildRequest' sessions
run scv 'Exec' exec
run scv-tui/internal/app '.' tui
run scv-server/internal/tools/webfetch 'ConvertHTML|Dial|Resolve' web
run scv-server/internal/provider/openai 'Stream10kDeltas|Responses10kDeltas' web
run scv-server/internal/provider/openai 'NagleServerRequest' roundtrip
run shared/atomicfile 'WriteFile' roundtrip
run scv-server/internal/sessionstore 'SessionStartToFirstRequest' roundtrip
run scv/internal/cmd/exec 'StreamReply' exec
run scv-server/internal/delegate/output 'ClaudeStream' agents
run scv-server/internal/delegate/transport/oneshot 'Launch' agents
for f in protocol server tools sessions exec tui web agents roundtrip; do
	echo
	"$gobin/benchstat" "$out/$f.txt"
done
if [[ -x "${SCV_BENCH_DIR:-$root/../shared/bench}/run.sh" ]]; then
	echo
	scripts/bench-exec.sh "$count"
else
	echo
	echo "bench: no shared bench (../shared/bench or SCV_BENCH_DIR): the end-to-end table is left out" >&2
fi
