package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// makeIn runs make with args in the repository's root, on the binary
// buildQlab built by make (up to date: no second link), and returns its
// output.
func makeIn(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here")
	}
	bin, err := buildQlab()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), "make", append([]string{"-s", "-C", "../..", "QLAB=" + bin}, args...)...)
	cmd.Env = append(cmd.Environ(), env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// TestMakeSaysItIsBuilding: a cold make lesson-1 compiles for minutes
// before the lesson starts; it says so at once, and names make setup
// (scripts/build.sh's progress itself: build_script_test.go). The build
// is buildQlab's: make build to a file not there yet.
func TestMakeSaysItIsBuilding(t *testing.T) {
	if testing.Short() {
		t.Skip("links the qlab binary: not in -short")
	}
	b, err := buildOnce()
	require.NoError(t, err)
	if !b.viaMake {
		t.Skip("no make here")
	}
	assert.Contains(t, b.stderr, "building")
	assert.Contains(t, b.stderr, "make setup")
}

// TestMakeLessonsNeedsNoBroker: make lessons runs every lesson that has
// an in-memory variant in memory, the broker lessons' twins included, and
// never stops for want of a broker; each ends with a Next: that works
// after make.
func TestMakeLessonsNeedsNoBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every in-memory lesson (-short)")
	}
	t.Parallel() // in memory, its own process: nothing shared but the CPU
	out, errOut, err := makeIn(t, []string{"RABBITMQ_URL=amqp://guest:guest@127.0.0.1:1/"}, "lessons", "LESSONS_SPEED=1000")
	require.NoError(t, err, errOut)
	for _, l := range []string{"Q01", "Q10", "Q12", "Q13", "Q14"} {
		assert.Contains(t, out, l+" · ")
	}
	assert.Contains(t, out, "(inmem, speed 1000×)")
	assert.NotContains(t, out, "(rabbit,")
	assert.Contains(t, out, "Next: make lesson-2")
}
