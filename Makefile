# Two commands do all the set-up on a fresh machine:
#   make run    start the whole service locally (no AWS account, no Docker)
#   make test   install what the tests need and run them all
.PHONY: test test-under-load ci run deps vet fmt mediagen build ffmpeg-layer fuzz bench faults soak

GO ?= go

test:
	scripts/test.sh

# make test with 8 busy processes competing for the 2 cores: the tests wait
# for conditions and move clocks, never for the machine to be quick. The
# busy processes end with the run, however it ends (KILL: a busy loop has
# nothing to clean up, and a TERM that reached one before its sh started
# would be lost). The whole suite under load takes 4 to 8 times its quiet
# time (internal/local/runtime alone, 8 min quiet, took over an hour), so
# go test's hang detector is widened (TEST_TIMEOUT); CI runs the packages
# whose work waits on timers and queues (UNDER_LOAD_PKGS) this way after
# make test, and the whole suite is run so by hand (docs/contributing.md).
UNDER_LOAD_PKGS = ./internal/local/localsqs ./internal/local/stepfunctions ./internal/local/apigw \
	./internal/local/lambdaruntime ./internal/core/generation ./internal/core/webhook \
	./internal/adapters/upstream ./internal/testkit/waitfor ./internal/api/httpapi ./client
test-under-load:
	@pids=""; trap 'kill -KILL $$pids 2>/dev/null' EXIT INT TERM; \
	for i in 1 2 3 4 5 6 7 8; do sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	echo "8 busy processes:$$pids"; \
	TEST_TIMEOUT=$${TEST_TIMEOUT:-150m} TEST_PKGS="$(TEST_PKGS)" scripts/test.sh

# CI: the whole suite quiet, then the waiting packages under load.
ci: test
	$(MAKE) test-under-load TEST_PKGS="$(UNDER_LOAD_PKGS)"

deps:
	@scripts/install-deps.sh

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# Each request decoder fuzzed for FUZZTIME (make test runs their seeds only).
FUZZTIME ?= 1m
fuzz:
	$(GO) test -run XXX -fuzz FuzzParseGenerate -fuzztime $(FUZZTIME) ./internal/core/catalog
	$(GO) test -run XXX -fuzz FuzzParseCreate -fuzztime $(FUZZTIME) ./internal/core/longform
	$(GO) test -run XXX -fuzz FuzzParseEstimate -fuzztime $(FUZZTIME) ./internal/core/longform

# Every call of the generate, poll and long-form paths faulted in every
# mode (make test crashes every generation call but fails only the first
# call of each operation, and tries each long-form operation in two modes).
faults:
	MEDIAGEN_FAULTS=full $(GO) test -count=1 -run . ./internal/testkit/faults

# The concurrency soak against the local runtime for SOAKTIME (make test
# runs it for a few seconds).
SOAKTIME ?= 2m
soak:
	MEDIAGEN_SOAK=$(SOAKTIME) $(GO) test -count=1 -timeout 0 -run TestSoak -v ./internal/local/runtime

# The user's and operator's command (client, admin, serve) and the
# developers' (lambdas, bench), built into bin/.
mediagen:
	$(GO) build -o bin/mediagen ./cmd/mediagen
	$(GO) build -o bin/mediagen-dev ./cmd/mediagen-dev

# The local runtime on its embedded defaults: prints the base URL and the dev
# account's API key. ADDR and DATA override the address and data directory;
# ROUTING names a routing file (docs/routing.md; default: every variant on
# the built-in simulator). LAMBDAS=1 runs the deployed shape instead: every
# function's built bootstrap with its template environment and IAM role, on
# moto's server (mediagen-dev lambdas; docs/deploy.md).
ADDR ?= 127.0.0.1:8080
DATA ?= .mediagen
ROUTING ?=
LAMBDAS ?=
run: mediagen
	@scripts/install-deps.sh runtime
	$(if $(LAMBDAS),bin/mediagen-dev lambdas,bin/mediagen serve) --addr $(ADDR) --data $(DATA) $(if $(ROUTING),--routing $(ROUTING))

# The local runtime beside a bare net/http server under the same loopback
# load, the cost counts in dollars, and the long-form timings
# (docs/performance.md). BENCH_FLAGS adds flags (mediagen-dev bench -h lists them).
BENCH_FLAGS ?=
bench: mediagen
	@scripts/install-deps.sh runtime
	bin/mediagen-dev bench --json bench.json $(BENCH_FLAGS)

# ---- Lambda builds ---------------------------------------------------------
# Each function is a linux/arm64 bootstrap, built like `sam build` does: the
# template gives every function CodeUri "." and BuildMethod makefile, so SAM
# runs build-<LogicalId> below with ARTIFACTS_DIR set; its cache hashes the
# whole module, so a change in internal/ rebuilds every function.
LAMBDA_GOFLAGS = GOOS=linux GOARCH=arm64 CGO_ENABLED=0
LAMBDA_BUILD = $(LAMBDA_GOFLAGS) $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w'

# A function's folder is its logical ID without "Function", in kebab case
# (build-GenerationEstimateFunction builds ./functions/generation-estimate;
# the deploy tests check it for every function of template.yaml). Every
# function gets routing.json from the repository root (the RoutingFile
# parameter names it; docs/routing.md). Without one a deployed stack could
# route nothing (the embedded file names the local simulator), so `sam
# build` stops here and says how to make it; `make build`, which only
# checks the binaries, sets ROUTING_OPTIONAL=1.
ROUTING_OPTIONAL ?=
function_folder = $(shell printf '%s' '$(1)' | sed -E 's/([a-z0-9])([A-Z])/\1-\2/g' | tr '[:upper:]' '[:lower:]')
build-%Function:
	@if [ ! -f routing.json ] && [ -z "$(ROUTING_OPTIONAL)" ]; then \
	  echo "routing.json is missing: the deployed functions would route no request. Make one at the repository root before sam build (docs/deploy.md#the-routing-file; example: docs/routing.md)." >&2; \
	  exit 1; \
	fi
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/$(call function_folder,$*)
	@if [ -f routing.json ]; then cp routing.json $(ARTIFACTS_DIR)/routing.json; fi

# The assemble function's ffmpeg layer: static linux/arm64 ffmpeg and ffprobe
# as the npm registry ships them inside these packages (GPLv3 builds from
# johnvansickle.com), unpacked into bin/ of the layer (/opt/bin at run time).
# The layer also carries the fonts burned captions are drawn in, one per
# script (longform.CaptionFonts; Lambda's image has no fonts), under
# fonts/ (/opt/fonts, CAPTION_FONT_DIR): DejaVu Sans from the npm package
# of the DejaVu fonts, and from Debian's packages (apt-get download, no
# root needed) Noto Sans Devanagari and Arabic (fonts-noto-core)
# and WenQuanYi Micro Hei for Japanese (fonts-wqy-microhei), with their
# licences: about 6 MB of fonts beside ffmpeg and ffprobe.
FFMPEG_NPM = @ffmpeg-installer/linux-arm64@4.1.4
FFPROBE_NPM = @ffprobe-installer/linux-arm64@5.2.0
FONTS_NPM = dejavu-fonts-ttf@2.37.3
FONTS_DEB = fonts-noto-core fonts-wqy-microhei
FONTS_DEB_FILES = usr/share/fonts/truetype/noto/NotoSansDevanagari-Regular.ttf \
  usr/share/fonts/truetype/noto/NotoSansArabic-Regular.ttf \
  usr/share/fonts/truetype/wqy/wqy-microhei.ttc
build-FfmpegLayer:
	@mkdir -p $(ARTIFACTS_DIR)/bin $(ARTIFACTS_DIR)/fonts
	@tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent $(FFMPEG_NPM) $(FFPROBE_NPM) >/dev/null && \
	  for t in *.tgz; do tar -xzf $$t package/ffmpeg package/ffprobe 2>/dev/null || true; done && \
	  install -m 0755 package/ffmpeg package/ffprobe $(ARTIFACTS_DIR)/bin/ && rm -rf $$tmp
	@tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent $(FONTS_NPM) >/dev/null && \
	  tar -xzf *.tgz package/ttf/DejaVuSans.ttf package/LICENSE && \
	  install -m 0644 package/ttf/DejaVuSans.ttf $(ARTIFACTS_DIR)/fonts/ && \
	  install -m 0644 package/LICENSE $(ARTIFACTS_DIR)/fonts/DejaVu-LICENSE && rm -rf $$tmp
	@tmp=$$(mktemp -d) && cd $$tmp && apt-get download -qq $(FONTS_DEB) >/dev/null && \
	  for d in *.deb; do dpkg-deb -x $$d root; done && \
	  for f in $(FONTS_DEB_FILES); do install -m 0644 root/$$f $(ARTIFACTS_DIR)/fonts/ || exit 1; done && \
	  install -m 0644 root/usr/share/doc/fonts-noto-core/copyright $(ARTIFACTS_DIR)/fonts/Noto-copyright && \
	  install -m 0644 root/usr/share/doc/fonts-wqy-microhei/copyright $(ARTIFACTS_DIR)/fonts/WenQuanYi-copyright && rm -rf $$tmp
	@ls -l $(ARTIFACTS_DIR)/bin $(ARTIFACTS_DIR)/fonts

ffmpeg-layer:
	@$(MAKE) -s build-FfmpegLayer ARTIFACTS_DIR=$(CURDIR)/bin/ffmpeg-layer

# make build: every function into bin/lambda/<folder>/bootstrap, with sizes,
# refusing a binary that links a local-only package.
build:
	@scripts/build-lambdas.sh
