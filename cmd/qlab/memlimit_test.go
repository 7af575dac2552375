package main

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A --tasks run lowers an unset memory limit for its duration and puts
// it back after; a limit already set (GOMEMLIMIT) is the user's and stays.
func TestLimitMemoryOnlyWhereNoneIsSet(t *testing.T) {
	was := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(was)

	restore := limitMemory()
	assert.Equal(t, int64(scaledRunMemory), debug.SetMemoryLimit(-1))
	restore()
	assert.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))

	debug.SetMemoryLimit(1 << 30)
	restore = limitMemory()
	assert.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1))
	restore()
	assert.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1))
}
