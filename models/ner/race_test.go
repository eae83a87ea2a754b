//go:build race

package ner

// raceDetector shortens the comparisons with prose, which run no
// goroutines, under the race detector (ten times slower).
const raceDetector = true
