# gleaner — the two commands of a fresh machine are `make demo` and `make test`.
# Both fetch what they need (Go modules; the compiler toolchain cgo uses) by themselves.

SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin:$(HOME)/go/bin
GO ?= go
BIN := bin/gleaner
# packages with goroutines or shared state, run under the race detector
RACE_PKGS := ./internal/memo ./engine/... ./kernels/... ./models/... ./eval/... ./index/... ./retrieve/... ./methods/... ./graphops/... ./server/... ./fuseattn/... ./cuda

.PHONY: all deps build nats-server demo test vet fmt-check bench peers clean ort-lib ort-optional fuzz docs-check cuda-check

all: build

deps: .deps.stamp
.deps.stamp: go.mod go.sum
	@command -v $(GO) >/dev/null || { echo "Go is required: https://go.dev/dl/ (go1.26+)"; exit 1; }
	@echo "== checking the C toolchain cgo uses (gcc, g++) and OpenBLAS"
	@command -v gcc >/dev/null || { echo "installing gcc for cgo"; apt-get update -qq && apt-get install -y -qq gcc libc6-dev; }
	@command -v g++ >/dev/null || { echo "installing g++ for the CUDA host emulation (cuda/emu)"; apt-get update -qq && apt-get install -y -qq g++; }
	@ldconfig -p 2>/dev/null | grep -q libopenblas.so.0 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ echo "installing OpenBLAS (optional: GEMM falls back to gonum without it)"; \
		  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas0-pthread >/dev/null; } || \
		echo "note: OpenBLAS not installed; GEMM uses gonum's pure-Go BLAS"; }
	@echo "== fetching the Go modules (go mod download; the first time, about 600 MB on disk)"
	$(GO) mod download
	@touch $@

# ONNX Runtime is fetched only for what needs it: make test (the ort parity tests) and make ort-lib
# (gleaner's --runtime ort); the demo and the default build never load it.
ort-optional:
	@$(MAKE) --no-print-directory ort-lib || echo "note: ONNX Runtime not fetched; the ort backend and its parity tests are unavailable"

# ONNX Runtime's shared library, from the npm package onnxruntime-node (no other source is reachable).
ORT_VERSION := 1.30.0
ORT_LIB := .deps/onnxruntime/libonnxruntime.so.1
ort-lib: $(ORT_LIB)
$(ORT_LIB):
	@echo "== fetching ONNX Runtime $(ORT_VERSION) from npm (onnxruntime-node), for the ort runtime and its tests"
	@command -v npm >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq npm >/dev/null; }
	mkdir -p .deps/onnxruntime .deps/tmp
	cd .deps/tmp && npm pack --silent onnxruntime-node@$(ORT_VERSION) >/dev/null && \
		tar xzf onnxruntime-node-$(ORT_VERSION).tgz package/bin/napi-v6/linux/x64/libonnxruntime.so.1
	mv .deps/tmp/package/bin/napi-v6/linux/x64/libonnxruntime.so.1 $@
	rm -rf .deps/tmp

# The version --version prints: the git revision, when there is one.
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
build: deps
	@echo "== compiling bin/gleaner (the first build compiles every dependency: about a minute on 2 cores)"
	$(GO) build -ldflags "-X main.buildVersion=$(VERSION)" -o $(BIN) ./cmd/gleaner

# NATS, built from the module gleaner already depends on (docs/fleet.md runs a cluster of three).
nats-server: deps
	$(GO) build -o bin/nats-server github.com/nats-io/nats-server/v2

demo: build
	@echo "== running the demo: a synthetic multi-hop corpus, indexed, its graphs built, every method evaluated (written to demo/)"
	./$(BIN) demo --out demo

vet: deps
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: deps ort-optional fmt-check vet
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race $(RACE_PKGS)
	$(GO) test -count=1 -tags purego ./kernels/...
	@echo "== the pure-Go build (CGO_ENABLED=0: no OpenBLAS, AVX, ONNX Runtime or CUDA emulation)"
	CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/gleaner
	CGO_ENABLED=0 $(GO) test -count=1 ./...
	GLEANER_BLAS=gonum $(GO) test -count=1 ./kernels/cpu/...
	bash benchmarks/peers/ppr.sh --parity

# Run every shell block and Go program of README.md and docs/*.md, in order, in a scratch folder.
docs-check: build
	bash .ci/docs-check

# Compile every CUDA kernel with nvcc (Debian's CUDA 11.8; installed when missing and run as root) for
# sm_80 and sm_90, print ptxas's register/spill report, and check the committed PTX (cuda/ptx) is current.
cuda-check:
	bash cuda/check.sh

# Fuzz every parser a user can feed, FUZZTIME each (CI: 2000x, an execution count; a
# long run: FUZZTIME=10m, or an exec count such as FUZZTIME=1000000x).
# Crashers land in <package>/testdata/fuzz and become regression tests.
FUZZTIME ?= 60s
FUZZ_TARGETS := ./corpus:FuzzNodes ./corpus:FuzzEdges ./corpus:FuzzQueries ./corpus:FuzzQrels \
	./corpus:FuzzJSONArrays ./corpus:FuzzDatasetFolders ./corpus/store:FuzzManifest ./index:FuzzOpenMutated \
	./eval:FuzzTREC ./models:FuzzVectors ./models/safetensors:FuzzRead ./models/tokenize:FuzzLoad ./server:FuzzDecodeRequest ./models/kgextract:FuzzReply \
	./models/ner:FuzzProseEntities ./models/lexical:FuzzAnalyze
fuzz: deps
	@set -e; for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) 2>&1 | grep -E '^(fuzz: elapsed|PASS|FAIL|ok|---|    )' | tail -4; \
		test $${PIPESTATUS[0]} -eq 0; done

# Benchmarks (see benchmarks/README.md); BENCH selects, BENCHFLAGS adds flags.
BENCH ?= .
bench: deps
	cd benchmarks && $(GO) test -run '^$$' -bench '$(BENCH)' -benchtime 10x $(BENCHFLAGS) .

# Peer comparisons: FAISS / numpy flat search and bleve BM25; igraph / networkx PageRank.
peers: build
	bash benchmarks/peers/run.sh
	bash benchmarks/peers/ppr.sh

clean:
	rm -rf bin demo .deps.stamp .deps
