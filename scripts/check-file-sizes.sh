#!/usr/bin/env bash
# Fails when a file git tracks is over MAX_KB (1024: 1 MB): a build output
# or a data file committed by mistake (a 20 MB binary once was) weighs on
# every clone forever. Run by make test; run it in a repository's root.
set -euo pipefail
max_bytes=$(( ${MAX_KB:-1024} * 1024 ))
status=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] && [ ! -L "$f" ] || continue # deleted in the work tree, or a link
  size=$(stat -c %s "$f")
  if [ "$size" -gt "$max_bytes" ]; then
    echo "$f is $size bytes, over the ${MAX_KB:-1024} KB limit for a tracked file: untrack it (git rm --cached) and ignore it, or make it smaller" >&2
    status=1
  fi
done < <(git ls-files -z)
exit $status
