#!/usr/bin/env bash
# Builds SCV and installs its binaries (scv, scv-server, scv-tui,
# scv-agents, scv-bridge) into ~/.local/bin, or into the directory named
# by --dir DIR or SCV_INSTALL_DIR. Needs Go and the Go module proxy only;
# never root. Each binary is copied beside its target and renamed over it,
# so a running scv keeps working and no half-written file is left.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="${SCV_INSTALL_DIR:-${HOME:?HOME is not set; name the directory with --dir DIR}/.local/bin}"
while [ $# -gt 0 ]; do
	case "$1" in
	--dir) dest="${2:?--dir needs a directory}"; shift 2 ;;
	--dir=*) dest="${1#--dir=}"; shift ;;
	-h|--help)
		echo "usage: scripts/install.sh [--dir DIR]   (default: SCV_INSTALL_DIR or ~/.local/bin)"
		exit 0 ;;
	*) echo "install.sh: unknown argument $1; usage: scripts/install.sh [--dir DIR]" >&2; exit 2 ;;
	esac
done
command -v go >/dev/null || { echo "install.sh: Go is not on PATH; install Go 1.26 or newer (https://go.dev/dl/), then run this again" >&2; exit 1; }
"$here/scripts/build.sh" >/dev/null
mkdir -p "$dest"
for b in scv scv-server scv-tui scv-agents scv-bridge; do
	tmp="$(mktemp "$dest/.$b.XXXXXX")"
	trap 'rm -f "$tmp"' EXIT
	cp "$here/bin/$b" "$tmp"
	chmod 0755 "$tmp"
	mv -f "$tmp" "$dest/$b"
	trap - EXIT
done
echo "Installed scv, scv-server, scv-tui, scv-agents and scv-bridge in $dest ($("$dest/scv" --version))."
case ":$PATH:" in
*":$dest:"*) echo "Run scv in a project directory to start." ;;
*) echo "$dest is not on your PATH; add it, for example: echo 'export PATH=\"$dest:\$PATH\"' >> ~/.bashrc" ;;
esac
