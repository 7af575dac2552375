package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompareRepeatIsBounded(t *testing.T) {
	for _, n := range []string{"0", "21", "-1"} {
		code, _, errOut := qlab("compare", "10", "--repeat", n)
		assert.Equal(t, exitUsage, code, n)
		assert.Contains(t, errOut, "--repeat must be between 1 and 20, got "+n)
	}
}

// TestCompareHelpNamesTheLessonsOwnSpeeds: without --speed, compare runs
// Q14 (the seed's minutes) at its own speed, and the help says so.
func TestCompareHelpNamesTheLessonsOwnSpeeds(t *testing.T) {
	code, out, _ := qlab("compare", "--help")
	require.Equal(t, exitOK, code)
	out = strings.Join(strings.Fields(out), " ") // the help wraps
	assert.Contains(t, out, "goes at its own (400× for 14) (default 20)")
}
