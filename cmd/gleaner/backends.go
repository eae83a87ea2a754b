package main

import (
	"fmt"
	"os"

	"github.com/gleaner-rag/gleaner/cuda" // registers "cuda" (an explanatory error without -tags cuda)
	"github.com/gleaner-rag/gleaner/engine"
	_ "github.com/gleaner-rag/gleaner/kernels/cpu" // registers "cpu"
	_ "github.com/gleaner-rag/gleaner/methods"     // registers every method, section, build step and report
)

// The one place that registers compute backends and methods. The library never reads
// the environment: the CLI resolves the backend's name and passes the
// opened backend down (retrieve.Options.Backend and the model loaders).

// envBackend names the environment variable that is --backend's default.
const envBackend = "GLEANER_BACKEND"

// backendName is flag, else $GLEANER_BACKEND, else "cpu".
func backendName(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv(envBackend); env != "" {
		return env
	}
	return "cpu"
}

// openBackend opens the named backend; --device (given: set) picks the
// GPU of --backend cuda and is refused for any other backend.
func openBackend(name string, device int, set bool) (engine.Backend, error) {
	switch {
	case set && name != cuda.Name:
		return nil, fmt.Errorf("--device: applies to --backend cuda; the backend is %s", name)
	case device < 0:
		return nil, fmt.Errorf("--device: want a GPU ordinal ≥ 0, got %d", device)
	}
	var be engine.Backend
	var err error
	if name == cuda.Name && device != 0 {
		be, err = cuda.Open(device)
	} else {
		be, err = engine.Open(name)
	}
	if err != nil {
		return nil, fmt.Errorf("--backend: %w", err)
	}
	return be, nil
}
