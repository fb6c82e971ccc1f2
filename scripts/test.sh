#!/usr/bin/env bash
# make test: install what the tests need, check formatting and vet, then run
# every test with the race detector. The full log goes to test-output/.
#
# TEST_PKGS narrows the run to those packages (make test-under-load's CI
# pass; the formatting, vet and build checks are then left to make test).
# TEST_TIMEOUT is go test's hang detector per package, not a speed target:
# under load a package takes longer and must not be called hung for it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
TEST_PKGS=${TEST_PKGS:-./...}
TEST_TIMEOUT=${TEST_TIMEOUT:-40m}

if [ "$TEST_PKGS" = "./..." ]; then
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './tools/*'))
  if [ -n "$unformatted" ]; then
    echo "gofmt: these files need formatting (run gofmt -w):" >&2
    echo "$unformatted" >&2
    exit 1
fi
go vet ./...
scripts/check-file-sizes.sh
# make build as sam build runs it: every function's arm64 bootstrap builds,
# links no local-only package and stays within its size limit.
mkdir -p test-output
scripts/build-lambdas.sh >test-output/build.log 2>&1 || { cat test-output/build.log >&2; echo "make build failed (log: test-output/build.log)" >&2; exit 1; }
fi

# The DynamoDB tests run on moto's server (DynamoDB with transactions),
# started here on a free loopback port for the whole run and stopped by its
# PID at the end; each test makes tables of its own (a prefix).
if ! python3 -c "import moto" >/dev/null 2>&1; then
  echo "fix: pip install 'moto[server]==5.2.1'   (the DynamoDB tests run on moto's server; python3 -c 'import moto' fails)" >&2
  exit 1
fi
# The deploy tests expand template.yaml as sam deploy does and lint it.
if ! python3 -c "import samtranslator" >/dev/null 2>&1 || ! command -v cfn-lint >/dev/null 2>&1; then
  echo "fix: pip install aws-sam-translator==1.110.0 cfn-lint==1.51.0   (the deploy tests expand and lint template.yaml)" >&2
  exit 1
fi
mkdir -p test-output
moto_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
# Through scripts/moto_server.py: moto's server with a cancelled transaction
# rolled back item by item, not by copying whole tables (see the script).
python3 scripts/moto_server.py -H 127.0.0.1 -p "$moto_port" >test-output/moto.log 2>&1 &
moto_pid=$!
trap 'kill "$moto_pid" 2>/dev/null; wait "$moto_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  if curl -fs -o /dev/null "http://127.0.0.1:$moto_port/moto-api/"; then break; fi
  if ! kill -0 "$moto_pid" 2>/dev/null; then
    echo "moto_server exited at start (log: test-output/moto.log)" >&2
    exit 1
  fi
  sleep 0.1
done
if ! curl -fs -o /dev/null "http://127.0.0.1:$moto_port/moto-api/"; then
  echo "moto_server did not answer on 127.0.0.1:$moto_port within 30 s (log: test-output/moto.log)" >&2
  exit 1
fi
export DYNAMODB_ENDPOINT="http://127.0.0.1:$moto_port"

log=test-output/go-test.log
if [ "$TEST_PKGS" != "./..." ]; then log=test-output/go-test-subset.log; fi
set +e
go test -race -count=1 -timeout "$TEST_TIMEOUT" -v $TEST_PKGS >"$log" 2>&1
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
