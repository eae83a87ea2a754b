package main

import (
	"os"

	_ "github.com/gleaner-rag/gleaner/cuda"        // registers "cuda" (an explanatory error without -tags cuda)
	_ "github.com/gleaner-rag/gleaner/kernels/cpu" // registers "cpu"
)

// The one place that registers compute backends. The library never reads
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
