# Two commands do all the set-up on a fresh machine:
#   make run    start the whole service locally (no AWS account, no Docker)
#   make test   install what the tests need and run them all
.PHONY: test run deps vet fmt mediagen

GO ?= go

test:
	scripts/test.sh

deps:
	@scripts/install-deps.sh

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# The admin command, built into bin/.
mediagen:
	$(GO) build -o bin/mediagen ./cmd/mediagen

# The local runtime on its embedded defaults: prints the base URL and the dev
# account's API key. ADDR and DATA override the address and data directory.
ADDR ?= 127.0.0.1:8080
DATA ?= .mediagen
run: mediagen
	@scripts/install-deps.sh runtime
	bin/mediagen serve --addr $(ADDR) --data $(DATA)
