GO      ?= go
BIN     ?= bin
# A count, not a duration: a duration-bounded run can fail with "context
# deadline exceeded" when time runs out while a slow input is executing.
FUZZTIME ?= 2000x
QUICK ?=
# Packages that hold testing.F fuzzers; each fuzzer runs briefly in `make test`.
FUZZPKGS := ./block/ ./metadata/

.PHONY: all build man test vet unit fuzz-short demo bench bench-build bench-read bench-recompress check-compat clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# The manual pages in man/, generated from the tools' option tables and
# texts (a test fails when they are out of date).
man:
	$(GO) run ./man -o man

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

unit:
	$(GO) test -count=1 -timeout 12m ./...

# Run every fuzzer of FUZZPKGS for FUZZTIME each (seed corpus plus a short mutation run).
fuzz-short:
	@set -e; for pkg in $(FUZZPKGS); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=20x $$pkg; \
	  done; \
	done

test: vet unit fuzz-short

demo: build
	./scripts/demo.sh

bench:
	$(GO) test -run='^$$' -bench=. -benchtime=3x ./...

# Side-by-side comparisons with squashfs tools (root, Debian packages);
# QUICK=1 uses a small corpus. See bench/README.md.
bench-build: build
	BIN=$(abspath $(BIN)) QUICK=$(QUICK) ./bench/build.sh

bench-read: build
	BIN=$(abspath $(BIN)) QUICK=$(QUICK) ./bench/read.sh

# Images from every level, codec, packing option and rewrite, checked with
# the reference tools (REF_DWARFS=DIR; skipped with a message without it).
check-compat: build
	BIN=$(abspath $(BIN)) ./bench/check-compat.sh

bench-recompress: build
	BIN=$(abspath $(BIN)) QUICK=$(QUICK) ./bench/recompress.sh

clean:
	rm -rf $(BIN)
