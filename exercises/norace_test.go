//go:build !race

package exercises

// raceFlag is empty where this test was built without the race detector
// (no cgo or C compiler): the exercises are built the same way.
var raceFlag []string
