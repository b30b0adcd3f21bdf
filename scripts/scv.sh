#!/usr/bin/env bash
# Builds SCV if needed and runs it: `scripts/scv.sh exec "PROMPT"` answers
# one prompt; with no arguments it opens the terminal UI. With nothing
# configured SCV runs its built-in demo model.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/build.sh" >/dev/null
exec "$here/bin/scv" "$@"
