# sptool: offline processing of clink savepoints.
# `make` lists the targets.

GO        ?= go
BIN       := bin/sptool
PKGS      := ./...
FUZZTIME  ?= 60s
EXAMPLE   := testdata/example
DEMO_OUT  := $(or $(TMPDIR),/tmp)/sptool-demo

.PHONY: all help build test test-short race cover ci lint fmt-check vet cross fuzz golden demo bench example interop clean

all help:
	@echo "targets:"
	@echo "  build      build bin/sptool"
	@echo "  test       run every test (unit, golden, CLI scripts, fixtures)"
	@echo "  test-short the tests without the slow ones (-short)"
	@echo "  race       the tests (-short) under the race detector, but the CLI scripts"
	@echo "  cover      the tests with a coverage summary (cover.out)"
	@echo "  ci         what CI runs: lint, tests, race, short fuzzing, interop with independent readers"
	@echo "  demo       build and run sptool on the bundled example savepoint"
	@echo "  bench      benchmarks against cp on generated savepoints (see BENCHMARKS.md)"
	@echo "  fuzz       fuzz the readers and parsers (FUZZTIME=$(FUZZTIME) each)"
	@echo "  golden     regenerate golden files (review the diff!)"
	@echo "  lint       gofmt, go vet, and a build for other systems (cross)"
	@echo "  cross      build for $(CROSS)"
	@echo "  example    regenerate the bundled example tree $(EXAMPLE)"
	@echo "  interop    check sptool's outputs with independent readers (npm apache-arrow, DuckDB)"
	@echo "  clean      remove bin/ and cover.out"

# Without cgo (which only net's resolver, linked in through net/http, would
# use) the binary is static: with no dynamic loader and no libc it starts
# a few milliseconds sooner (BENCHMARKS.md has the figures).
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/sptool

test:
	$(GO) test $(PKGS)

test-short:
	$(GO) test -short $(PKGS)

# The CLI's txtar scripts (TestScripts) run each sptool command as a new
# process of the test binary: under the race detector that is its start-up,
# two minutes of CI's CPU for code the packages' own tests run under it. The
# scripts run without it in `make test`.
race:
	$(GO) test -race -short -skip '^TestScripts$$' $(PKGS)

cover:
	$(GO) test -coverprofile=cover.out $(PKGS) && $(GO) tool cover -func=cover.out | tail -1

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

lint: fmt-check vet cross

# The memory maps and the signals differ by system: build for the others too,
# and vet (test files included) one system of each kind the build tags tell
# apart: not unix, unix without flock, the other unixes (about 25 s each
# without a build cache). 32-bit platforms are refused by design
# (savepoint/arch32.go).
CROSS := darwin/arm64 freebsd/amd64 windows/amd64 solaris/amd64 aix/ppc64 linux/arm64
CROSS_VET := windows/amd64 aix/ppc64 darwin/arm64

cross:
	@for p in $(CROSS); do echo "build $$p"; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build $(PKGS) || exit 1; done
	@for p in $(CROSS_VET); do echo "vet $$p"; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet $(PKGS) || exit 1; done

# Each fuzz target runs for FUZZTIME; `go test -fuzz` takes one target at a time.
# Minimising a new input is bounded too: by default it may take 60s, and when
# FUZZTIME ends during it `go test` fails with "context deadline exceeded".
# scripts/fuzz.sh runs again, bounded by a count of calls rather than a time,
# a run that fails that way with no failing input (a race in Go 1.26's fuzz
# coordinator, golang/go#75804).
FUZZ_TARGETS := \
	./savepoint:FuzzDecodeSnapshot \
	./savepoint:FuzzOpenMapped \
	./savepoint:FuzzOpenTree \
	./savepoint:FuzzParseVersionMap \
	./savepoint:FuzzParseSidecar \
	./savepoint:FuzzParseTimers \
	./savepoint:FuzzParseCompleted \
	./savepoint:FuzzDecompress \
	./savepoint/codec:FuzzCodecRoundTrip \
	./savepoint/codec:FuzzParse \
	./rules:FuzzParse \
	./rules:FuzzParseInt64 \
	./rules:FuzzKeysFile \
	./transform:FuzzApply \
	./transform:FuzzApplyTree \
	./transform:FuzzRescale \
	./internal/rowtext:FuzzAppendJSONString \
	./internal/cli:FuzzAppendIndented

fuzz:
	@GO=$(GO) FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh $(FUZZ_TARGETS)

# Only the packages whose tests define -update take it: go test fails in
# the others ("flag provided but not defined").
golden:
	$(GO) test $$(grep -rl --include='*_test.go' 'flag.Bool("update"' . | xargs -n1 dirname | sort -u) -update

example:
	rm -rf $(EXAMPLE)
	CLINK_STATE_FSYNC=0 $(GO) run ./internal/gen/spgen example $(EXAMPLE)

# The main job on the bundled example: inspect and validate it, plan and apply
# a GDPR erasure, validate the result and show that the subjects are gone.
# The string subjects of examples/rules/gdpr-erasure-keys.txt, as keys or as
# the K of an expiring map's composite K 0x1F element keys.
ERASED := any(["user-7", "user-42", "user-299", "user-9999"], {key == \# || key startsWith (\# + "\x1f")})

demo: build
	@echo "== sptool inspect $(EXAMPLE)"
	$(BIN) inspect $(EXAMPLE)
	@echo; echo "== sptool validate $(EXAMPLE)"
	$(BIN) validate $(EXAMPLE)
	@echo; echo "== sptool plan -r examples/rules/gdpr-erasure.yaml $(EXAMPLE)"
	$(BIN) plan -r examples/rules/gdpr-erasure.yaml $(EXAMPLE)
	@echo; echo "== sptool apply -r examples/rules/gdpr-erasure.yaml $(EXAMPLE) -o $(DEMO_OUT) --force --report $(DEMO_OUT).report.json"
	$(BIN) apply -r examples/rules/gdpr-erasure.yaml $(EXAMPLE) -o $(DEMO_OUT) --force --report $(DEMO_OUT).report.json
	@echo; echo "== sptool validate $(DEMO_OUT)"
	$(BIN) validate $(DEMO_OUT)
	@echo; echo "== rows of the erased string subjects in the input, then left in the output (expect none):"
	@$(BIN) cat $(EXAMPLE) --where '$(ERASED)' | grep -c -v '^#'
	@$(BIN) cat $(DEMO_OUT) --where '$(ERASED)' | grep -v '^#' || echo "   none"

bench: build
	./scripts/bench.sh

interop: build
	./interop/run.sh

# CI fuzzes each target briefly, a check that the readers still hold on
# what their corpora and a few seconds of new inputs give (every target
# in FUZZ_TARGETS, about 2 minutes); make fuzz is the real run.
ci: lint test race
	$(MAKE) fuzz FUZZTIME=5s
	@if [ -x interop/run.sh ]; then $(MAKE) interop; fi

clean:
	rm -rf bin cover.out
