#!/usr/bin/env bash
# Builds every SCV binary into ./bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
# Static binaries start faster (no dynamic loader, no libc resolver).
export CGO_ENABLED=0
version=${SCV_VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo 0.1.0-dev)}
ldflags="-s -w -X github.com/scv-cli/scv/shared/version.Version=${version}"
mkdir -p bin
for m in scv scv-server scv-tui scv-agents scv-bridge; do
	(cd "$m" && go build -trimpath -ldflags "$ldflags" -o ../bin/"$m" .)
done
echo "built: $(ls bin | tr '\n' ' ')"
