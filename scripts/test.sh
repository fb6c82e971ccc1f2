#!/usr/bin/env bash
# make test: install what the tests need, check formatting and vet, then run
# every test with the race detector. The full log goes to test-output/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './tools/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt: these files need formatting (run gofmt -w):" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...

mkdir -p test-output
log=test-output/go-test.log
set +e
go test -race -count=1 -timeout 20m -v ./... >"$log" 2>&1
status=$?
set -e

# What ran: the adapters the conformance suite used, and each package.
grep -hE '^\s+[a-z_]+_test\.go:[0-9]+: adapter: ' "$log" | sed -E 's/^\s+[a-z_]+_test\.go:[0-9]+: /conformance /' | sort -u || true
grep -E '^(ok|FAIL|---\s+FAIL|panic:)|^\s+--- FAIL' "$log" || true
passed=$(grep -cE '^\s*--- PASS' "$log" || true)
failed=$(grep -cE '^\s*--- FAIL' "$log" || true)
skipped=$(grep -cE '^\s*--- SKIP' "$log" || true)
if [ "$status" -ne 0 ]; then
  echo
  echo "failures (full log: $log):"
  grep -E -B2 -A25 '^\s*--- FAIL|^panic:|^FAIL\s' "$log" | head -n 400 || true
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit "$status"
