#!/usr/bin/env bash
# Prints the directory of every module of the workspace, one per line.
set -euo pipefail
cd "$(dirname "$0")/.."
go list -m -f '{{.Dir}}'
