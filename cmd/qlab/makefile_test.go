package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// makeIn runs make with args in the repository's root, its binary built
// to a directory of the test's own, and returns its output.
func makeIn(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here")
	}
	cmd := exec.CommandContext(t.Context(), "make", append([]string{"-s", "-C", "../..", "QLAB=" + filepath.Join(t.TempDir(), "qlab")}, args...)...)
	cmd.Env = append(cmd.Environ(), env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// TestMakeSaysItIsBuilding: a cold make lesson-1 compiles for minutes
// before the lesson starts; it says so at once, and names make setup
// (scripts/build.sh's progress itself: build_script_test.go).
func TestMakeSaysItIsBuilding(t *testing.T) {
	_, errOut, err := makeIn(t, nil, "build")
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, "building")
	assert.Contains(t, errOut, "make setup")
}

// TestMakeLessonsNeedsNoBroker: make lessons runs every lesson that has
// an in-memory variant in memory, the broker lessons' twins included, and
// never stops for want of a broker; each ends with a Next: that works
// after make.
func TestMakeLessonsNeedsNoBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every in-memory lesson (-short)")
	}
	out, errOut, err := makeIn(t, []string{"RABBITMQ_URL=amqp://guest:guest@127.0.0.1:1/"}, "lessons", "LESSONS_SPEED=1000")
	require.NoError(t, err, errOut)
	for _, l := range []string{"Q01", "Q10", "Q12", "Q13", "Q14"} {
		assert.Contains(t, out, l+" · ")
	}
	assert.Contains(t, out, "(inmem, speed 1000×)")
	assert.NotContains(t, out, "(rabbit,")
	assert.Contains(t, out, "Next: make lesson-2")
}
