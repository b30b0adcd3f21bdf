#!/usr/bin/env bash
# Installs the pinned third-party Node.js packages the tests drive SCV with
# (scripts/node/package.json and its lock: pi, the ACP TypeScript SDK,
# vscode-jsonrpc, the MCP reference servers) into .cache/node, which git
# ignores. Idempotent: it runs `npm ci` only when the lock file changed since
# the last install, and takes a lock so parallel test processes install once.
# Needs Node.js and npm (scripts/deps.sh installs them) and the npm registry
# the first time.
#
# Usage: scripts/node-deps.sh [optin]
#   optin installs scripts/node-optin (the real ACP adapters, about 550 MB,
#   for the tests that SCV_TEST_REAL_ACP=1 turns on) into .cache/node-optin.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
set_name=node
case "${1:-}" in
"") ;;
optin) set_name=node-optin ;;
*)
	echo "node-deps.sh: unknown package set ${1}; use no argument or optin" >&2
	exit 2
	;;
esac
dest="$root/.cache/$set_name"
lock="$root/scripts/$set_name/package-lock.json"
mkdir -p "$dest"

for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "node-deps.sh: $tool is not installed; run scripts/deps.sh (it installs Node.js and npm with apt-get) or install Node.js 20 or later" >&2
		exit 1
	fi
done

exec 9>"$dest.lock"
flock 9
want=$(sha256sum "$lock" | cut -d' ' -f1)
if [[ -f $dest/.installed && $(cat "$dest/.installed") == "$want" && -d $dest/node_modules ]]; then
	exit 0
fi
echo "node-deps.sh: installing the pinned npm packages of scripts/$set_name into .cache/$set_name" >&2
rm -f "$dest/.installed"
cp "$root/scripts/$set_name/package.json" "$lock" "$dest/"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
	cat "$log" >&2
	echo "node-deps.sh: npm ci failed (output above); the tests need the npm registry once to install scripts/$set_name/package-lock.json" >&2
	exit 1
fi
echo "$want" >"$dest/.installed"
