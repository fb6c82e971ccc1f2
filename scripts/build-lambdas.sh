#!/usr/bin/env bash
# Builds every Lambda for linux/arm64 as `sam build` would (make build-<LogicalId>),
# prints each binary's size, and fails if a function links a local-only package
# or a binary is over MAX_MB (10 MiB, as AWS counts Lambda sizes: cold start
# grows with the binary; each main.go calls its own prod constructor so that
# only its handler's code is linked).
#
# The poller may be 12 MiB (POLLER_MAX_MB): it is the one function that
# needs five AWS clients (DynamoDB, S3, SQS, Step Functions, Secrets
# Manager) besides the provider client and the output copier, 10.4 MiB in
# all; its cold starts come with a new poll worker (at most 10 at once),
# never in a client's request.
#
# generate may be 11 MiB (GENERATE_MAX_MB): it submits to the provider in the
# client's request, so it links the provider client, Secrets Manager (the
# tokens), DynamoDB, SQS (the first poll) and, since image inputs over what
# a DynamoDB item holds are kept in the bucket, S3: 10.4 MiB. Its cold
# start is measured by `make bench` (docs/performance.md).
#
# long-story-create may be 11 MiB (LONG_STORY_CREATE_MAX_MB): it reads the
# music as audio before any credit moves, fetched through the egress guard
# or, uploaded, from the bucket (S3), besides DynamoDB and Step Functions:
# 10.1 MiB.
#
# assemble may be 11 MiB (ASSEMBLE_MAX_MB): besides S3, DynamoDB and the
# ffmpeg runner it reads a video's music from its snapshot or, for work
# created before the snapshots, from its upload checked as audio (the
# uploads' checker, media.FileInputs): 10.0 MiB. It runs in the workflow,
# never in a client's request.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bin/lambda
mkdir -p "$out"
status=0
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
  local_deps=$(GOOS=linux GOARCH=arm64 go list -tags lambda.norpc -deps "./functions/$name" | grep -E '/internal/(local|testkit)/|modernc.org/sqlite' || true)
  if [ -n "$local_deps" ]; then
    echo "functions/$name links local-only packages:" >&2
    echo "$local_deps" >&2
    status=1
  fi
  max_mb=${MAX_MB:-10}
  if [ "$name" = poller ]; then max_mb=${POLLER_MAX_MB:-12}; fi
  if [ "$name" = generate ]; then max_mb=${GENERATE_MAX_MB:-11}; fi
  if [ "$name" = long-story-create ]; then max_mb=${LONG_STORY_CREATE_MAX_MB:-11}; fi
  if [ "$name" = assemble ]; then max_mb=${ASSEMBLE_MAX_MB:-11}; fi
  size=$(stat -c %s "$out/$name/bootstrap")
  awk -v n="$name" -v s="$size" 'BEGIN { printf "%-26s %7.1f MB\n", n, s / 1048576 }'
  if [ "$size" -gt $(( max_mb * 1048576 )) ]; then
    echo "functions/$name is $size bytes, over the $max_mb MB (MiB) limit: see what it links with go version -m / go tool nm -size" >&2
    status=1
  fi
done
exit $status
