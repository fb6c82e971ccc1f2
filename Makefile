# Two commands do all the set-up on a fresh machine:
#   make run    start the whole service locally (no AWS account, no Docker)
#   make test   install what the tests need and run them all
.PHONY: test run deps vet fmt mediagen

GO ?= go

test:
	scripts/test.sh

deps:
	scripts/install-deps.sh

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# The admin command, built into bin/.
mediagen:
	$(GO) build -o bin/mediagen ./cmd/mediagen

run:
	@echo "make run arrives with the local runtime (issue: single generations end to end)." >&2
	@echo "Until then, use the admin command: make mediagen && bin/mediagen --help" >&2
	@exit 1
