package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeBlock returns the fenced block that follows the first line of the
// README containing marker.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	s := string(readme)
	i := strings.Index(s, marker)
	require.GreaterOrEqual(t, i, 0, "README has no %q", marker)
	open := strings.Index(s[i:], "```")
	require.GreaterOrEqual(t, open, 0)
	body := s[i+open:]
	body = body[strings.Index(body, "\n")+1:]
	end := strings.Index(body, "```")
	require.GreaterOrEqual(t, end, 0)
	return body[:end]
}

// TestReadmeJSONExample runs the README's `qlab run 1 --json` (in a
// synctest bubble, so time is exact) and compares its first and last lines
// with the README's example: the example cannot drift from the program.
func TestReadmeJSONExample(t *testing.T) {
	want := readmeBlock(t, "Example (`qlab run 1 --json`, first and last lines)")
	synctest.Test(t, func(t *testing.T) {
		code, out, errOut := qlab("run", "1", "--json")
		require.Equal(t, exitOK, code, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		got := lines[0] + "\n" + lines[len(lines)-1] + "\n"
		assert.Equal(t, want, got, "README's JSON example is stale; paste these two lines")
	})
}

// TestReadmeUsageNamesEveryFlag checks the README's usage block against
// each command's --help: every flag a command has is in its usage line.
func TestReadmeUsageNamesEveryFlag(t *testing.T) {
	usage := readmeBlock(t, "## Running lessons")
	flagLine := regexp.MustCompile(`(?m)^  --([a-z-]+)`)
	for _, cmd := range []string{"list", "run", "tui", "compare", "broker", "dlq"} {
		code, help, _ := qlab(cmd, "--help")
		require.Equal(t, exitOK, code, cmd)
		var line string // the command's usage line and its indented continuations
		for _, l := range strings.Split(usage, "\n") {
			switch {
			case strings.HasPrefix(l, "qlab "+cmd+" "):
				line = l
			case line != "" && strings.HasPrefix(l, " "):
				line += l
			case line != "":
				break
			}
		}
		require.NotEmpty(t, line, "README usage has no line for qlab %s", cmd)
		for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
			if m[1] == "v" {
				continue // -v is --verbose's short form
			}
			assert.Contains(t, line, "--"+m[1], "README usage of qlab %s", cmd)
		}
	}
}
