#!/usr/bin/env bash
# Installs the system tools the tests need and the machine may lack: tmux
# (the scv-tui end-to-end test drives the TUI in it), the DejaVu fonts (its
# screenshots are rendered with them) and Node.js with npm,
# then the pinned npm packages the tests drive SCV with (scripts/node-deps.sh).
# Idempotent and quiet when everything is present; uses apt-get (through
# sudo when not root), never prompting. Run it before scripts/test.sh.
set -euo pipefail

missing=()
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# The TUI's screenshot tests render with DejaVu Sans Mono.
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf ] || missing+=(fonts-dejavu-core)
if [ ${#missing[@]} -eq 0 ]; then
	exec "$(dirname "$0")/node-deps.sh"
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps.sh: missing ${missing[*]} and there is no apt-get to install them; install them with the system's package manager" >&2
	exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "deps.sh: missing ${missing[*]}; installing needs root, and sudo is not available: run this script as root" >&2
		exit 1
	fi
	sudo=(sudo -n)
fi

echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "${sudo[@]}" apt-get update -q >"$log" 2>&1 ||
	! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
	cat "$log" >&2
	echo "deps.sh: could not install ${missing[*]} with apt-get (output above)" >&2
	exit 1
fi
for tool in tmux node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "deps.sh: $tool is still missing after apt-get install" >&2
		exit 1
	fi
done
"$(dirname "$0")/node-deps.sh"
