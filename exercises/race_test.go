//go:build race

package exercises

// raceFlag makes the author check build the exercises as this test was
// built: with the race detector.
var raceFlag = []string{"-race"}
