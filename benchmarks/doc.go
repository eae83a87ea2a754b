// Package benchmarks holds gleaner's speed measurements: `go test -bench`
// suites (run with `make bench`) and, under peers/, scripts that run gleaner
// and a peer system on the same input in one run and print the ratio.
// Nothing here asserts a timing; figures are recorded in RESULTS.md with
// the machine and date.
package benchmarks
