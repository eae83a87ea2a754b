# gleaner — the two commands of a fresh machine are `make demo` and `make test`.
# Both fetch what they need (Go modules; the compiler toolchain cgo uses) by themselves.

SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin:$(HOME)/go/bin
GO ?= go
BIN := bin/gleaner
# packages with goroutines or shared state, run under the race detector
RACE_PKGS := ./engine/... ./kernels/... ./models/... ./eval/... ./index/... ./retrieve/... ./graphops/...

.PHONY: all deps build demo test vet fmt-check bench peers clean

all: build

deps: .deps.stamp
.deps.stamp: go.mod go.sum
	@command -v $(GO) >/dev/null || { echo "Go is required: https://go.dev/dl/ (go1.26+)"; exit 1; }
	@command -v gcc >/dev/null || { echo "installing gcc for cgo"; apt-get update -qq && apt-get install -y -qq gcc libc6-dev; }
	@ldconfig -p 2>/dev/null | grep -q libopenblas.so.0 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ echo "installing OpenBLAS (optional: GEMM falls back to gonum without it)"; \
		  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas0-pthread >/dev/null; } || \
		echo "note: OpenBLAS not installed; GEMM uses gonum's pure-Go BLAS"; }
	$(GO) mod download
	@touch $@

build: deps
	$(GO) build -o $(BIN) ./cmd/gleaner

demo: build
	./$(BIN) demo --out demo

vet: deps
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: deps fmt-check vet
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race $(RACE_PKGS)
	$(GO) test -count=1 -tags purego ./kernels/...
	GLEANER_BLAS=gonum $(GO) test -count=1 ./kernels/cpu/...
	bash benchmarks/peers/ppr.sh --parity

# Benchmarks (see benchmarks/README.md); BENCH selects, BENCHFLAGS adds flags.
BENCH ?= .
bench: deps
	cd benchmarks && $(GO) test -run '^$$' -bench '$(BENCH)' -benchtime 10x $(BENCHFLAGS) .

# Peer comparisons: FAISS / numpy flat search and bleve BM25; igraph / networkx PageRank.
peers: build
	bash benchmarks/peers/run.sh
	bash benchmarks/peers/ppr.sh

clean:
	rm -rf bin demo .deps.stamp
