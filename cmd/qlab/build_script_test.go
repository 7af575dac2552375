package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGo is a go command for scripts/build.sh: "go build -v" fetches two
// modules and compiles three packages, a second apart, then exits with
// $FAKE_EXIT after an error line; "go list -deps" names five packages.
const fakeGo = `#!/bin/sh
case "$1" in
list) printf 'a\nb\nc\nd\ne\n'; exit 0 ;;
esac
echo "go: downloading example.com/m v1.0.0" >&2; sleep 1
echo "go: downloading example.com/n v1.2.0" >&2; sleep 1
echo "example.com/m/internal/with/a/very/long/path/indeed" >&2; sleep 1
echo "example.com/n" >&2; sleep 1
echo "example.com/cmd" >&2
[ "$FAKE_EXIT" = 0 ] || echo "# example.com/cmd
cmd/main.go:3:1: syntax error" >&2
exit "$FAKE_EXIT"
`

// buildScript runs scripts/build.sh with the fake go, reporting every
// second from the start.
func buildScript(t *testing.T, exit string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash here")
	}
	goCmd := filepath.Join(t.TempDir(), "go")
	require.NoError(t, os.WriteFile(goCmd, []byte(fakeGo), 0o755))
	cmd := exec.CommandContext(t.Context(), "bash", "../../scripts/build.sh", filepath.Join(t.TempDir(), "qlab"), "./cmd/x")
	cmd.Env = append(cmd.Environ(), "GO="+goCmd, "FAKE_EXIT="+exit, "QLAB_BUILD_QUIET=0", "QLAB_BUILD_EVERY=1")
	out, err := cmd.CombinedOutput() // stderr is no terminal: a line per report
	return string(out), err
}

// A cold build says what it is doing while it fetches and compiles, in
// lines that fit 80 columns, and what it did at the end.
func TestBuildScriptReportsProgress(t *testing.T) {
	t.Parallel() // the fake go sleeps 4 s: beside the other tests that wait
	out, err := buildScript(t, "0")
	require.NoError(t, err, out)
	assert.Contains(t, out, "building ")
	assert.Regexp(t, `fetching modules: [12] so far \(0m0\ds\), last example.com/[mn] v1`, out)
	assert.Regexp(t, `compiling: [123] of 5 packages \(0m0\ds\), last `, out)
	assert.Contains(t, out, "3 packages compiled, 2 modules fetched, in 0m0")
	for _, line := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, len([]rune(line)), 80, line)
	}
}

// A failed build passes go's errors on as they are and exits as go did.
func TestBuildScriptPassesErrorsAndExitStatus(t *testing.T) {
	t.Parallel() // the fake go sleeps 4 s: beside the other tests that wait
	out, err := buildScript(t, "3")
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, out)
	assert.Equal(t, 3, exit.ExitCode())
	assert.Regexp(t, regexp.MustCompile(`(?m)^cmd/main.go:3:1: syntax error$`), out)
	assert.Contains(t, out, "# example.com/cmd\n")
}
