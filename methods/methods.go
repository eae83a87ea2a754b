// Package methods links every built-in retrieval method, with its index
// sections, build steps and reports, into a program: import it for its
// side effects (the CLI does), or import the method folders one by one.
//
// One folder per method (methods/<name>): each owns its options (defaults,
// rules and the settings the CLI and the server bind by name), its index
// section (how it is built, stored, opened and checked), its query-time
// method and its reports, and registers them with package retrieve and
// package index in init. Adding a method is one folder and one import line
// here; nothing else changes (docs/contributing.md). Methods that share a
// section or options are one folder: nexusrag and linearrag (trigraph),
// kg-seeds, kg-khop, kg-paths and seeder (seeder), the FastInsight ablations.
package methods

import (
	_ "github.com/gleaner-rag/gleaner/methods/fastinsight"
	_ "github.com/gleaner-rag/gleaner/methods/fuserag"
	_ "github.com/gleaner-rag/gleaner/methods/gar"
	_ "github.com/gleaner-rag/gleaner/methods/ketrag"
	_ "github.com/gleaner-rag/gleaner/methods/ppr"
	_ "github.com/gleaner-rag/gleaner/methods/re2"
	_ "github.com/gleaner-rag/gleaner/methods/seeder"
	_ "github.com/gleaner-rag/gleaner/methods/trigraph"
)
