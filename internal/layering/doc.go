// Package layering holds no code: its test checks, with `go list -deps`,
// that the packages keep the dependency rules docs/contributing.md states
// (the engine imports nothing of gleaner's; graphops no model; retrieve,
// the methods, eval, the server and the index no kernel package).
package layering
