package exercises

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStubDoesNotGiveTheTimerAway: exercise 03 is the timer that holds a
// failed task on the lesson clock; its TODO once spelled out that one
// line (sys.Clock().AfterFunc(Delay, move)), the line its wall_clock
// wrong solution gets wrong. The TODO names what to use, not the line.
func TestStubDoesNotGiveTheTimerAway(t *testing.T) {
	stub, err := os.ReadFile(filepath.Join("03_delayed_retry", "delayed_retry.go"))
	require.NoError(t, err)
	solution, err := os.ReadFile(filepath.Join("03_delayed_retry", "testdata", "solution.go"))
	require.NoError(t, err)
	line := "sys.Clock().AfterFunc(Delay, move)"
	require.Contains(t, string(solution), line, "the solution's timer line moved: update this test")
	assert.NotContains(t, strings.Join(strings.Fields(string(stub)), ""), strings.ReplaceAll(line, " ", ""))
	assert.Contains(t, string(stub), "sys.Clock()", "the TODO still names the lesson clock")
}
