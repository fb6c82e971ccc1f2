#!/usr/bin/env bash
# Builds every Lambda for linux/arm64 as `sam build` would (make build-<LogicalId>),
# prints each binary's size, and fails if a function links a local-only package
# or a binary is over MAX_MB (10 MiB, as AWS counts Lambda sizes: cold start
# grows with the binary; each main.go calls its own prod constructor so that
# only its handler's code is linked).
set -euo pipefail
cd "$(dirname "$0")/.."
out=bin/lambda
mkdir -p "$out"
status=0
max_bytes=$(( ${MAX_MB:-10} * 1048576 ))
printf '%-26s %10s\n' function size
for dir in functions/*/; do
  name=$(basename "$dir")
  # The logical ID is the folder in PascalCase plus "Function"
  # (generation-estimate: GenerationEstimateFunction), as the Makefile's
  # build-%Function rule reads it back.
  logical=$(printf '%s' "$name" | sed -E 's/(^|-)([a-z0-9])/\U\2/g')Function
  if ! grep -qE "^  $logical:\s*$" template.yaml; then
    echo "functions/$name has no function $logical in template.yaml" >&2
    status=1
    continue
  fi
  # The binaries are checked here, not deployed: no routing file is needed.
  make -s "build-$logical" ARTIFACTS_DIR="$out/$name" ROUTING_OPTIONAL=1
  # Local stand-ins (embedded store, simulator, ASL runner, ...) must never
  # reach a Lambda binary.
  local_deps=$(GOOS=linux GOARCH=arm64 go list -tags lambda.norpc -deps "./functions/$name" | grep -E '/shared/(local|testsupport)|/shared/store/sqlitestore|modernc.org/sqlite' || true)
  if [ -n "$local_deps" ]; then
    echo "functions/$name links local-only packages:" >&2
    echo "$local_deps" >&2
    status=1
  fi
  size=$(stat -c %s "$out/$name/bootstrap")
  awk -v n="$name" -v s="$size" 'BEGIN { printf "%-26s %7.1f MB\n", n, s / 1048576 }'
  if [ "$size" -gt "$max_bytes" ]; then
    echo "functions/$name is $size bytes, over the ${MAX_MB:-10} MB (MiB) limit: see what it links with go version -m / go tool nm -size" >&2
    status=1
  fi
done
exit $status
