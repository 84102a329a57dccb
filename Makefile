GO      ?= go
BIN     ?= bin
# The system encoders: a cgo build encodes lzma and flac with liblzma and
# libFLAC when it has the build tags liblzma and libflac, which need their
# headers; GOTAGS is the tags of the headers installed, found when a recipe
# runs (after cdeps may have installed them). Without them the pure-Go
# encoders are used. GOCMD, which every go command here runs as, puts the
# tags in GOFLAGS, so that the go commands tests run get them too.
GOTAGS = $(shell GO="$(GO)" ./scripts/cdeps.sh tags)
GOCMD = GOFLAGS="$(strip $(GOFLAGS) $(if $(GOTAGS),-tags=$(GOTAGS)))" $(GO)
comma := ,
# Short fuzz runs in `make test`: a count, not a duration: a duration-bounded
# run can fail with "context deadline exceeded" when time runs out while a
# slow input is executing.
FUZZSHORT ?= 2000x
# `make fuzz`: how long each fuzzer runs, and how many workers each uses
# (empty: one per core; FUZZPARALLEL=1 keeps a long run to one core).
FUZZTIME ?= 5m
FUZZPARALLEL ?=
QUICK ?=
# Packages that hold testing.F fuzzers; each fuzzer runs briefly in `make test`.
FUZZPKGS := ./block/ ./block/internal/xzfmt/ ./block/flac/ ./block/ricepp/ ./metadata/ ./dedup/ ./dedup/formats/ ./internal/mountopts/ ./source/ ./internal/dwarfsextract/ ./tarinput/ ./ociinput/ ./imagesig/ ./ociartifact/ ./internal/brotli/ ./source/internal/httpfetch/

.PHONY: all build build-static cross dist test-cross test-arm64 test-arm test-386 test-s390x test-windows deps cdeps man test vet unit nocgo fuzz-short demo bench bench-build bench-read bench-recompress bench-compare bench-categorize bench-media bench-remote bench-remote-open bench-registry-lazy bench-shards bench-distributed bench-order bench-scale bench-scale-cores bench-mount bench-multi check-compat check-filters check-codecs check-ricepp clean

all: build

# The driver encodes nothing, so it is built without cgo: no libc, no
# libFLAC or liblzma mapped, no threads made by pthread (see README: Builds).
# So is the self-mounting runtime, which also decodes only the core
# compressions (RUNTIMEFLAGS), to stay small: every packed application
# carries a copy.
RUNTIMEFLAGS = -tags corecodecs
build: cdeps
	$(GOCMD) build -o $(BIN)/ $$($(GOCMD) list ./cmd/... | grep -v -e '/cmd/dwarfs$$' -e '/cmd/dwarfs-run$$')
	CGO_ENABLED=0 $(GOCMD) build -o $(BIN)/ ./cmd/dwarfs
	CGO_ENABLED=0 $(GOCMD) build $(RUNTIMEFLAGS) -o $(BIN)/ ./cmd/dwarfs-run

# The manual pages in man/, generated from the tools' option tables and
# texts (a test fails when they are out of date).
man:
	$(GOCMD) run ./man -o man -c completions

# One static binary per command, pure-Go encoders (see README: Builds).
build-static:
	CGO_ENABLED=0 $(GOCMD) build -o $(BIN)/static/ ./cmd/...
	CGO_ENABLED=0 $(GOCMD) build $(RUNTIMEFLAGS) -o $(BIN)/static/ ./cmd/dwarfs-run

# Release targets: static (CGO_ENABLED=0) builds, OS/ARCH; linux/arm is
# ARMv7 (GOARM). On Windows and 32-bit Linux dwarfs cannot mount (no FUSE
# library builds there) and says so; the other tools are whole.
CROSS ?= linux/amd64 linux/arm64 linux/386 linux/arm linux/ppc64le linux/riscv64 linux/s390x linux/loong64 \
	darwin/amd64 darwin/arm64 freebsd/amd64 windows/amd64
GOARM ?= 7
DIST ?= dist
# Archive times: SOURCE_DATE_EPOCH, else the last commit's time.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
VERSION ?= $(shell git describe --tags --always 2>/dev/null || echo dev)
# -trimpath and an empty build id: the same commit gives the same binaries.
CROSSFLAGS = -trimpath -ldflags=-buildid=

# Build the four tools for every CROSS target into $(BIN)/cross/OS-ARCH,
# and vet every package (tests included) for each. The go-fuse copy in
# internal/gofuse builds only where FUSE mounts (fusefs says which), so it is
# vetted by `make vet` alone.
cross:
	@set -e; for t in $(CROSS); do os=$${t%/*}; arch=$${t#*/}; \
	  echo "cross $$os/$$arch"; \
	  rm -rf $(BIN)/cross/$$os-$$arch; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch GOARM=$(GOARM) $(GOCMD) build $(CROSSFLAGS) -o $(BIN)/cross/$$os-$$arch/ ./cmd/...; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch GOARM=$(GOARM) $(GOCMD) build $(CROSSFLAGS) $(RUNTIMEFLAGS) -o $(BIN)/cross/$$os-$$arch/ ./cmd/dwarfs-run; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch GOARM=$(GOARM) $(GOCMD) vet $$(GOOS=$$os GOARCH=$$arch $(GOCMD) list ./... | grep -v /internal/gofuse/); \
	done

# Release archives in $(DIST): godwarfs-VERSION-OS-ARCH.tar.gz (.zip for
# Windows) with the binaries, man pages, README and LICENSE, and
# SHA256SUMS; reproducible (fixed times and owners, see scripts/dist).
dist: cross
	rm -rf $(DIST)
	$(GOCMD) run ./scripts/dist -version $(VERSION) -epoch $(SOURCE_DATE_EPOCH) -o $(DIST) $(foreach t,$(CROSS),$(BIN)/cross/$(subst /,-,$(t)))

# The emulated runs (make test-cross, after make test in CI): the test
# suites of the packages that need no FUSE for linux/arm64, linux/arm
# (32-bit) and linux/s390x (64-bit big-endian) under qemu-user and for
# linux/386 (32-bit) natively where the kernel runs it,
# and for windows/amd64 under Wine the tools' round trip (internal/wintest)
# plus the tests of the library and of what the Windows tools do there
# (and of tarinput, the spill file's removal: its other tests need Unix).
QEMU_ARM64 ?= qemu-aarch64-static
QEMU_ARM ?= qemu-arm-static
QEMU_S390X ?= qemu-s390x-static
WINE ?= wine
NOFUSE_PKGS = $(shell $(GO) list ./... | grep -v -e /internal/gofuse/ -e /internal/apprun -e /internal/moduletest -e /fusefs -e /cmd/dwarfs -e /cmd/godwarfs -e /internal/dwarfs$$ -e /bench/ -e /internal/wintest -e /internal/clustertest)
WINDOWS_PKGS = . ./block/ ./metadata/ ./internal/manifest/ ./internal/dwarfsextract/ ./internal/dwarfs/ ./internal/cli/ ./internal/chmod/ ./internal/glob/ ./internal/mountopts/

test-cross: test-arm64 test-arm test-386 test-s390x test-windows

test-arm64:
	GODWARFS_TEST_EXEC=$(QEMU_ARM64) CGO_ENABLED=0 GOARCH=arm64 $(GOCMD) test -count=1 -timeout 40m -exec $(QEMU_ARM64) $(NOFUSE_PKGS)

# 32-bit Linux: internal/dwarfs has no FUSE code there, and its tests check
# that dwarfs says it cannot mount.
test-arm:
	GODWARFS_TEST_EXEC=$(QEMU_ARM) CGO_ENABLED=0 GOARCH=arm GOARM=$(GOARM) $(GOCMD) test -count=1 -timeout 40m -exec $(QEMU_ARM) $(NOFUSE_PKGS) ./internal/dwarfs/

# 386 binaries run on an amd64 kernel as they are, when it has its 32-bit
# ABI turned on; some kernels refuse them (exec format error), and
# qemu-i386 cannot stand in (Go's 386 runtime crashes under it at fork and
# exec). There the test binaries are built, not run, and the run says so;
# test-arm runs the same suites on a 32-bit CPU.
test-386:
	@probe=$$(mktemp -d) && trap 'rm -rf "$$probe"' EXIT && \
	CGO_ENABLED=0 GOARCH=386 $(GOCMD) test -c -o "$$probe/" ./internal/version/ && \
	if "$$probe/version.test" -test.run '^$$' >/dev/null 2>&1; then \
	  CGO_ENABLED=0 GOARCH=386 $(GOCMD) test -count=1 -timeout 30m $(NOFUSE_PKGS) ./internal/dwarfs/; \
	else \
	  echo "test-386: this machine does not run linux/386 binaries; building the test binaries only (test-arm runs them on 32-bit)"; \
	  for p in $(NOFUSE_PKGS) ./internal/dwarfs/; do \
	    CGO_ENABLED=0 GOARCH=386 $(GOCMD) test -c -o "$$probe/$$(echo "$$p" | tr / _).test" "$$p" || exit 1; \
	  done; \
	fi

test-s390x:
	GODWARFS_TEST_EXEC=$(QEMU_S390X) CGO_ENABLED=0 GOARCH=s390x $(GOCMD) test -count=1 -timeout 40m -exec $(QEMU_S390X) $(NOFUSE_PKGS)

test-windows:
	WINE=$(WINE) ./scripts/wine/setup.sh
	rm -rf $(BIN)/cross/windows-amd64
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GOCMD) build $(CROSSFLAGS) -o $(BIN)/cross/windows-amd64/ ./cmd/...
	GODWARFS_WINDOWS_BIN=$(abspath $(BIN))/cross/windows-amd64 GODWARFS_WINE=$(WINE) $(GOCMD) test -tags wintest$(if $(GOTAGS),$(comma)$(GOTAGS)) -count=1 -v -run Windows ./internal/wintest/
	WINEDEBUG=-all CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GOCMD) test -count=1 -timeout 20m -exec $(WINE) $(WINDOWS_PKGS)
	WINEDEBUG=-all CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GOCMD) test -count=1 -timeout 5m -exec $(WINE) -run '^TestSpillLeavesNothing$$' ./tarinput/

# What a cgo build needs beyond Go and a C compiler for the system lzma
# and flac encoders: the headers of liblzma and libFLAC (Debian's
# liblzma-dev, libflac-dev), installed here or a failure; and ssh-keygen
# for the signing tests. libzstd is compiled from its Go module.
deps:
	@GO="$(GO)" ./scripts/cdeps.sh install
	@if ! command -v ssh-keygen >/dev/null 2>&1; then \
	  for try in 1 2 3; do \
	    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-client >/dev/null; then break; fi; \
	    [ "$$try" = 3 ] && { echo "could not install openssh-client" >&2; exit 1; }; \
	    sleep 10; \
	  done; \
	fi

# vet also vets the encoders without the system-library tags, the
# pure-Go lzma and flac a machine without their headers builds.
vet: cdeps
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GOCMD) vet ./...
	$(GOCMD) vet $(RUNTIMEFLAGS) ./block/ ./internal/apprun/ ./cmd/dwarfs-run/
	$(GO) vet ./block/encode/
	$(GOCMD) vet -tags benchremote,wintest,refdwarfs$(if $(GOTAGS),$(comma)$(GOTAGS)) ./bench/remote/ ./internal/wintest/ ./internal/mkdwarfs/

# The unit run's output goes through scripts/testsum: package results,
# failed tests' output, every skipped test with its reason, and a count.
# GODWARFS_REQUIRE_NO_SKIP=1 (CI) fails the run if any test skipped.
unit: cdeps
	@$(GOCMD) build -o $(BIN)/testsum ./scripts/testsum
	$(GOCMD) test -count=1 -timeout 12m -json $$($(GO) list ./... | grep -v /internal/moduletest$$) | $(BIN)/testsum $(if $(filter 1,$(GODWARFS_REQUIRE_NO_SKIP)),-no-skip)

# The module as an outside importer meets it (internal/moduletest): every
# public package imported, go install of the tools at a version served by a
# local GOPROXY, also without the C headers, and the size and modules of a
# program that only reads local images. It builds the module's dependencies
# again in scratch module caches, so it runs alone, after the unit tests.
.PHONY: moduletest
moduletest: cdeps
	@$(GOCMD) build -o $(BIN)/testsum ./scripts/testsum
	$(GOCMD) test -count=1 -timeout 30m -json ./internal/moduletest/ | $(BIN)/testsum $(if $(filter 1,$(GODWARFS_REQUIRE_NO_SKIP)),-no-skip)

# The concurrent code under the race detector: block cache and codec
# buffer pools and the cache shared by many images, lazy block headers, the metadata checks at open, the reader's block loading, the FUSE driver under load (its readers started on demand) and its read-ahead hints, images added and removed under load,
# the mkdwarfs pipeline, scanner, hasher and nilsimsa ordering, parallel extraction, the
# recompress workers, append and merge (base blocks copied through the pipeline) and the
# tar reader (decoding ahead of the scanner). Only the tests that drive concurrency run here; the
# full suites above already ran without -race, which is 5-10x cheaper.
RACE = $(GOCMD) test -race -count=1 -timeout 10m
.PHONY: race
race: cdeps
	$(RACE) -run 'TestCache|TestSharedCache|TestLazyHeader' ./block/
	$(RACE) -run 'TestCompressConcurrent|TestBufferReuse|TestZstdEncodersOnDemand' ./block/encode/
	$(RACE) -run 'TestConcurrentReadAt|TestChunkBlockChecks|TestCorruptBlockFailsAtRead|TestFault|TestLazyHeaderFaults|TestServingChecksNamesOnFirstUse' .
	$(RACE) -run 'TestCheckLazy|TestCheckNameOrder|TestCheckInvalidNames|TestNewFSMutations|TestCheckTables|TestResolveFSSTParts' ./metadata/
	$(RACE) -run 'TestConcurrentReads|TestUnmountUnderLoad|TestSequentialPrefetchImage|TestSecondPassFindsFirstBlocks|TestFault|TestMultiAddRemoveUnderLoad|TestMultiRemoveOpen|TestMemServesBesideWaitingReads|TestMemMaxThreads' ./fusefs/
	$(RACE) -run '^(TestRoundTripLevels|TestRoundTripPackAndCompression)$$/^(l[017]|--order_(similarity|nilsimsa).*|-S_16.*)$$' ./internal/mkdwarfs/
	$(RACE) -run 'TestBuildDeterministic|TestSparseHoles|TestNilsimsaOrderOptions' ./dedup/
	$(RACE) -run 'TestExtractToDisk|TestExtractDataOrder' ./internal/dwarfsextract/
	$(RACE) -run 'TestIntegrity' ./internal/dwarfsck/
	$(RACE) -run 'TestPipeline|TestAppendRoundTrip|TestMergeRoundTrip|TestGrowCancel' ./writer/
	$(RACE) ./tarinput/
	$(RACE) -run '^(TestRecompressCodecs|TestCancel)$$/^(default|categorize)\.dwarfs$$/^(zstd:level=3|lz4)$$' ./writer/

# Run every fuzzer of FUZZPKGS for FUZZSHORT each (seed corpus plus a short mutation run).
# The fuzzed decoders are pure Go in every build; without cgo the fuzz build
# does not instrument and recompile libzstd's C sources.
fuzz-short:
	@set -e; for pkg in $(FUZZPKGS); do \
	  for f in $$($(GOCMD) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f ($(FUZZSHORT))"; \
	    CGO_ENABLED=0 $(GOCMD) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZSHORT) -fuzzminimizetime=20x $$pkg; \
	  done; \
	done

# Run every fuzzer for FUZZTIME (make fuzz FUZZTIME=30s FUZZPARALLEL=1). The inputs each
# fuzzer found interesting are kept in its package's testdata/fuzz beside
# the crashers Go writes there, so the next run (and `make test`) starts
# from them; commit new crashers as regression inputs. Prints the
# executions each fuzzer reached.
.PHONY: fuzz
fuzz:
	@set -e; cache=$$($(GOCMD) env GOCACHE)/fuzz; summary=""; \
	for pkg in $(FUZZPKGS); do \
	  ip=$$($(GOCMD) list $$pkg); \
	  for f in $$($(GOCMD) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
	    st=0; CGO_ENABLED=0 $(GOCMD) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $(if $(FUZZPARALLEL),-parallel=$(FUZZPARALLEL)) $$pkg >fuzz.log.tmp 2>&1 || st=$$?; \
	    tail -3 fuzz.log.tmp; \
	    n=$$(grep -o 'execs: [0-9]*' fuzz.log.tmp | tail -1 | cut -d' ' -f2); rm -f fuzz.log.tmp; \
	    summary="$$summary$$pkg $$f: $${n:-0} execs\n"; \
	    if [ -d "$$cache/$$ip/$$f" ]; then mkdir -p $$pkg/testdata/fuzz/$$f && cp -n $$cache/$$ip/$$f/* $$pkg/testdata/fuzz/$$f/ 2>/dev/null || true; fi; \
	    [ "$$st" = 0 ] || { printf "$$summary"; echo "$$f failed; its crasher is in $$pkg/testdata/fuzz/$$f"; exit 1; }; \
	  done; \
	done; printf "$$summary"

# The CGO_ENABLED=0 build: everything compiles, and the block codecs, the
# encoders and the writer (which chooses layouts by compressed size) pass
# with the pure-Go encoders alone.
nocgo:
	CGO_ENABLED=0 $(GOCMD) build ./...
	CGO_ENABLED=0 $(GOCMD) test -count=1 ./block/ ./block/encode/ ./writer/

test: cdeps vet unit deploy-test moduletest race nocgo fuzz-short

# The recipes in deploy/: the Kubernetes manifests decoded with the API's
# types. deploy/ is a module of its own, so that the Kubernetes modules stay
# out of this module's requirements. (The Slurm recipe runs on a real
# cluster in internal/clustertest, part of unit.)
.PHONY: deploy-test
deploy-test:
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 ./...

# The set-up of a cgo build (build, vet, unit, race and so make demo and
# make test): as root where apt-get is, install the headers of liblzma and
# libFLAC if they are missing; where that cannot be done, say in one line
# that lzma and flac get the pure-Go encoders, and go on.
.PHONY: cdeps
cdeps:
	@GO="$(GO)" ./scripts/cdeps.sh setup

demo: build
	./scripts/demo.sh

bench:
	$(GOCMD) test -run='^$$' -bench=. -benchtime=3x ./...

# Side-by-side comparisons with squashfs tools (root, Debian packages);
# QUICK=1 uses a small corpus. See bench/README.md.
bench-build: build
	BIN=$(abspath $(BIN)) QUICK=$(QUICK) ./bench/build.sh

bench-read: build
	BIN=$(abspath $(BIN)) QUICK=$(QUICK) ./bench/read.sh

# Memory and time of the drivers, the library and the tools on a generated
# tree of 1,000,000 small files, beside the reference tools when REF_DWARFS
# is set (QUICK=1: 100,000 files). See bench/README.md.
bench-scale: build
	BIN=$(abspath $(BIN)) QUICK=$(QUICK) ./bench/scale.sh

# Mount time and RSS right after mounting of the FUSE drivers, alternated
# over rounds, beside the reference driver when REF_DWARFS is set (IMAGE:
# default the bench-scale image). See bench/README.md.
bench-mount: build
	BIN=$(abspath $(BIN)) ./bench/mount.sh

# Many small images: one dwarfs multi process beside a driver process per
# image (the reference's with REF_DWARFS). See bench/README.md.
bench-multi: build
	BIN=$(abspath $(BIN)) ./bench/multi.sh

# Images from every level, codec, packing option and rewrite, checked with
# the reference tools (REF_DWARFS=DIR; skipped with a message without it).
check-compat: build
	BIN=$(abspath $(BIN)) ./bench/check-compat.sh

# The reference manual's filter examples, run by both mkdwarfs (REF_DWARFS=DIR).
check-filters: build
	BIN=$(abspath $(BIN)) ./bench/check-filters.sh

# The zstd/lzma options (negative levels, lzma:binary= BCJ filters...) on
# a tree of executables, side by side with the reference mkdwarfs.
check-codecs: build
	BIN=$(abspath $(BIN)) ./bench/check-codecs.sh

# FITS trees packed by the reference mkdwarfs with --categorize=fits (RICEPP
# blocks), read back by godwarfs; RICEPP re-encoding must match byte for byte.
check-ricepp: build
	BIN=$(abspath $(BIN)) ./bench/check-ricepp.sh

bench-recompress: build
	BIN=$(abspath $(BIN)) QUICK=$(QUICK) ./bench/recompress.sh

# godwarfs beside the reference mkdwarfs (REF_DWARFS=dir of its tools;
# skipped with a note when unset) on x/tools and redis (REDIS_MIRROR) or
# its stand-in, the few-large-blocks binary tree and the CDNJS-like tree
# (CORPORA="xtools8 redis" leaves the slow ones out). See bench/README.md.
bench-compare: build
	BIN=$(abspath $(BIN)) ./bench/compare.sh

# How a build scales with cores: both mkdwarfs pinned to 1 and 2 cores,
# wall, CPU, phases, serial fraction and the projection for 16 and 64
# cores (CORPUS=redis LEVEL=7 REF_DWARFS=DIR). See bench/README.md.
bench-scale-cores: build
	BIN=$(abspath $(BIN)) ./bench/scale-cores.sh

# mkdwarfs --categorize on a mixed tree, beside the reference mkdwarfs
# when REF_DWARFS is set. See bench/README.md.
bench-categorize: build
	BIN=$(abspath $(BIN)) ./bench/categorize.sh

# The pcmaudio, fits and binary categorizers with FLAC and RICEPP blocks
# beside the reference tools (REF_DWARFS=DIR): reference images read back,
# our images checked by the reference, build and read times; see
# bench/media.sh.
bench-media: build
	BIN=$(abspath $(BIN)) ./bench/media.sh

# Mount an image from loopback S3 beside the local file; see bench/remote.sh.
bench-remote: build
	BIN=$(abspath $(BIN)) QUICK=$(QUICK) ./bench/remote.sh

# Mount, list and read one file of a >= 1 GiB image over S3 and HTTP and
# report the bytes fetched; see bench/remote-open.sh.
bench-remote-open: build
	BIN=$(abspath $(BIN)) ./bench/remote-open.sh

# A lazy mount from a loopback container registry: bytes fetched for
# ls -lR and a working set, and the time to the first byte beside a full
# skopeo copy.
bench-registry-lazy: build
	BIN=$(abspath $(BIN)) ./bench/registry-lazy.sh

# A tree built as shards, uploaded to loopback S3 and merged from there,
# beside a single build; see bench/shards.sh.
bench-shards: build
	BIN=$(abspath $(BIN)) ./bench/shards.sh

# The CDNJS-like tree built from loopback S3 as 4 shards (--shard=K/4)
# one at a time and merged, beside a single build; see bench/distributed.sh.
bench-distributed: build
	BIN=$(abspath $(BIN)) ./bench/distributed.sh

# The single build beside one shard per top-level directory merged, and
# beside the whole-tree order, for several corpora; see bench/order.sh.
bench-order: build
	BIN=$(abspath $(BIN)) ./bench/order.sh

clean:
	rm -rf $(BIN)
