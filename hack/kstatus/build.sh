#!/usr/bin/env bash
# Build the kstatus test helper (hack/kstatus: sigs.k8s.io/cli-utils' kstatus over JSON
# objects) into bin/kstatus, from the Go module proxy; skipped when it is up to date.
#
#   hack/kstatus/build.sh        # bin/kstatus
#
# Tests call it on demand (tests/status/kstatus_tool.py). Nothing here is committed (bin/).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SRC="${ROOT}/hack/kstatus"
BIN="${ROOT}/bin/kstatus"

if [[ -x "${BIN}" && "${BIN}" -nt "${SRC}/main.go" && "${BIN}" -nt "${SRC}/go.sum" ]]; then
    exit 0
fi
mkdir -p "${ROOT}/bin"
(cd "${SRC}" && GOFLAGS=-mod=mod go build -trimpath -o "${BIN}.tmp" .)
mv "${BIN}.tmp" "${BIN}"
