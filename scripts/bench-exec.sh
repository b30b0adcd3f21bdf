#!/usr/bin/env bash
# Prints the end-to-end table of docs/performance.md ("End to end"): `scv
# exec` against the shared bench's scripted model (../shared/bench, or
# SCV_BENCH_DIR), medians of RUNS runs (default 10) of wall time, CPU time
# and the peak RSS of the largest process:
#   - hello, tools5 and long2000 with a server of its own (the bench's
#     run.sh, unchanged), and tools5 again with a 50 ms login profile
#     (PROFILE=1);
#   - hello and tools5 attached to a running daemon against a server of
#     its own (--daemon / --no-daemon), on the same model and home.
# Usage: scripts/bench-exec.sh [runs]   (builds ./bin first)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
RUNS=${1:-${RUNS:-10}}
bench=${SCV_BENCH_DIR:-$root/../shared/bench}
if [[ ! -x "$bench/run.sh" ]]; then
	echo "bench-exec: no bench at $bench (set SCV_BENCH_DIR to the shared bench directory)" >&2
	exit 2
fi
scripts/build.sh >/dev/null
scv=$root/bin/scv

echo "## scv exec, a server of its own (run.sh, $RUNS runs)"
RUNS=$RUNS "$bench/run.sh" "$scv"
echo
echo "## tools5 with a 50 ms login profile (PROFILE=1)"
RUNS=$RUNS PROFILE=1 SCENARIOS=tools5 "$bench/run.sh" "$scv" | tail -n 1

# Attach to a daemon against spawn a server: the same set-up as run.sh.
tmp=$(mktemp -d)
fake_pid="" daemon_pid=""
cleanup() {
	[[ -n "$daemon_pid" ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
	[[ -n "$fake_pid" ]] && kill "$fake_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
home=$tmp/home work=$tmp/work
mkdir -p "$home/.scv" "$work"
python3 "$bench/fake_openai.py" 0 >"$tmp/port" 2>"$tmp/fake.log" &
fake_pid=$!
for _ in $(seq 50); do port=$(head -1 "$tmp/port" 2>/dev/null || true); [[ -n "$port" ]] && break; sleep 0.1; done
[[ -n "${port:-}" ]] || { echo "bench-exec: the fake model did not start" >&2; exit 1; }
cat >"$home/.scv/config.toml" <<TOML
[provider]
active = "fake"
[providers.fake]
kind = "openai"
wire_api = "chat"
base_url = "http://127.0.0.1:$port/v1"
api_key_env = "FAKE_KEY"
model = "fake-model"
TOML
chmod 600 "$home/.scv/config.toml"
envs=(env -i PATH="$PATH" HOME="$home" SCV_HOME="$home/.scv" FAKE_KEY=test TERM=dumb LANG=C.UTF-8)
"${envs[@]}" "$scv" daemon run --approval-policy auto 2>"$tmp/daemon.log" &
daemon_pid=$!
for _ in $(seq 100); do "${envs[@]}" "$scv" daemon status >/dev/null 2>&1 && break; sleep 0.05; done
"${envs[@]}" "$scv" daemon status >/dev/null 2>&1 || { echo "bench-exec: the daemon did not start" >&2; cat "$tmp/daemon.log" >&2; exit 1; }

hello="SCENARIO:hello Reply with a short greeting."
tools5="SCENARIO:tools5 Run the shell tool once per step as instructed, then reply done."
measure() { # label, scv exec arguments...
	local label=$1
	shift
	local rep
	rep=$(cd "$work" && python3 "$bench/measure.py" -n "$RUNS" --warmup 1 -- "${envs[@]}" "$scv" exec "$@")
	med() { awk -v lab="$1" 'index($0, lab) == 1 { n = split($0, f, /[ \t]+/); print f[n-1]; exit }' <<<"$rep"; }
	printf '| %s | %s | %s | %s |\n' "$label" "$(med 'A wall s')" "$(med 'A cpu s')" "$(med 'A peak MiB')"
}
echo
echo "## attach to a running daemon against spawn a server ($RUNS runs)"
printf '| run | wall median s | cpu median s | peak median MiB |\n|---|---|---|---|\n'
measure "hello, own server (--no-daemon)" --no-daemon "$hello"
measure "hello, in the daemon (--daemon)" --daemon "$hello"
measure "tools5, own server (--no-daemon)" --no-daemon --approval-policy auto "$tools5"
measure "tools5, in the daemon (--daemon)" --daemon "$tools5"
