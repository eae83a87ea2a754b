//go:build !race

package ner

const raceDetector = false
