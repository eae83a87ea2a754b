package benchmarks

import (
	"context"
	"flag"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"

	_ "github.com/gleaner-rag/gleaner/cuda"        // registers "cuda" (real with -tags cuda)
	_ "github.com/gleaner-rag/gleaner/kernels/cpu" // registers "cpu"
)

// -backend picks the backend the engine benchmarks run on (go test -bench
// . -backend cuda in a -tags cuda build on a GPU machine).
var backendName = flag.String("backend", "cpu", "engine backend for the benchmarks: cpu or cuda")

// benchBackend opens the benchmark backend, skipping when it cannot run here.
func benchBackend(b *testing.B) engine.Backend {
	b.Helper()
	be, err := engine.Open(*backendName)
	if err != nil {
		b.Skipf("backend %s: %v", *backendName, err)
	}
	b.Logf("backend: %s", be.Caps().Device)
	return be
}

// timed runs op once per iteration and waits for the backend before the
// next one, so an asynchronous device is measured to completion, not to
// the launch.
func timed(b *testing.B, be engine.Backend, op func() error) {
	b.Helper()
	for b.Loop() {
		must(b, op())
		must(b, be.Sync(context.Background()))
	}
}
