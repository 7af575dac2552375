package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docBlock returns the fenced block that follows the first line of doc
// (a path from the repository's root) containing marker.
func docBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + doc)
	require.NoError(t, err)
	s := string(b)
	i := strings.Index(s, marker)
	require.GreaterOrEqual(t, i, 0, "%s has no %q", doc, marker)
	open := strings.Index(s[i:], "```")
	require.GreaterOrEqual(t, open, 0)
	body := s[i+open:]
	body = body[strings.Index(body, "\n")+1:]
	end := strings.Index(body, "```")
	require.GreaterOrEqual(t, end, 0)
	return body[:end]
}

// TestReadmeJSONExample runs docs/cli.md's `qlab run 1 --json` (in a
// synctest bubble, so time is exact) and compares its first and last lines
// with the page's example: the example cannot drift from the program.
func TestReadmeJSONExample(t *testing.T) {
	want := docBlock(t, "docs/cli.md", "Example (`qlab run 1 --json`, first and last lines)")
	synctest.Test(t, func(t *testing.T) {
		code, out, errOut := qlab("run", "1", "--json")
		require.Equal(t, exitOK, code, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		got := lines[0] + "\n" + lines[len(lines)-1] + "\n"
		assert.Equal(t, want, got, "docs/cli.md's JSON example is stale; paste these two lines")
	})
}

// TestReadmeUsageNamesEveryFlag checks docs/cli.md's usage block against
// each command: every flag its --help lists is in its usage line, and a
// flag shown with its values (--names run|exact) takes exactly those, as
// the command's own error for a bad value lists them.
func TestReadmeUsageNamesEveryFlag(t *testing.T) {
	usage := docBlock(t, "docs/cli.md", "## Running lessons")
	flagLine := regexp.MustCompile(`(?m)^  --([a-z-]+)`)
	for _, cmd := range []string{"list", "run", "tui", "compare", "broker", "ex", "dlq"} {
		code, help, _ := qlab(cmd, "--help")
		require.Equal(t, exitOK, code, cmd)
		line := usageLine(usage, cmd)
		require.NotEmpty(t, line, "docs/cli.md usage has no line for qlab %s", cmd)
		for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
			if m[1] == "v" {
				continue // -v is --verbose's short form
			}
			assert.Contains(t, line, "--"+m[1], "docs/cli.md usage of qlab %s", cmd)
		}
		for _, m := range regexp.MustCompile(`--([a-z-]+) ([a-z]+(?:\|[a-z]+)+)`).FindAllStringSubmatch(line, -1) {
			args := append(lessonArg(cmd), "--"+m[1], "no-such-value")
			code, _, errOut := qlab(args...)
			require.Equal(t, exitUsage, code, "qlab %v: %s", args, errOut)
			assert.Equal(t, strings.Split(m[2], "|"), acceptedValues(errOut), "docs/cli.md usage of qlab %s --%s; the command says: %s", cmd, m[1], errOut)
		}
	}
}

// usageLine is the usage block's line for qlab cmd joined with its
// indented continuations, up to the next command's line.
func usageLine(usage, cmd string) string {
	var line string
	for _, l := range strings.Split(usage, "\n") {
		switch {
		case strings.HasPrefix(l, "qlab "+cmd+" "):
			line = l
		case line != "" && strings.HasPrefix(l, " "):
			line += l
		case line != "":
			return line
		}
	}
	return line
}

// lessonArg is the lesson number a command needs before its flags.
func lessonArg(cmd string) []string {
	switch cmd {
	case "run", "compare":
		return []string{cmd, "1"}
	}
	return []string{cmd}
}

// acceptedValues reads the values a "--x must be a, b or c" error lists.
func acceptedValues(errOut string) []string {
	m := regexp.MustCompile(`must be ([a-z]+(?:, [a-z]+)*(?: or [a-z]+)?)`).FindStringSubmatch(errOut)
	if m == nil {
		return nil
	}
	return strings.FieldsFunc(strings.ReplaceAll(m[1], " or ", ","), func(r rune) bool { return r == ',' || r == ' ' })
}

// TestReadmeSpeedError runs docs/broker.md's `--speed 500` example on the
// broker (it stops at the first declare, before a message is sent) and
// compares the error with the page's: exit 2, the same line.
func TestReadmeSpeedError(t *testing.T) {
	rabbittest.NeedBroker(t)
	want := docBlock(t, "docs/broker.md", "`--speed 500` stops with exit 2 and this line:")
	code, _, errOut := qlab("run", "10", "--backend", "rabbit", "--speed", "500")
	assert.Equal(t, exitUsage, code, errOut)
	assert.Equal(t, want, errOut, "docs/broker.md's --speed example is stale; paste this line")
}

// TestMarkdownBlocksRender: every Markdown doc (docMarkdown) closes every ``` fence,
// and outside the fences a command, a table or a fence starts after a
// blank line: a missing fence or blank line renders commands and sample
// output as one run-on paragraph (as "A three-node cluster" once did).
func TestMarkdownBlocksRender(t *testing.T) {
	docs := docMarkdown(t)
	command := regexp.MustCompile(`^(qlab|make|curl|rabbitmqctl|go test|go run) `)
	for _, path := range docs {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		lines := strings.Split(string(b), "\n")
		inFence := false
		for i, line := range lines {
			prev := ""
			if i > 0 {
				prev = lines[i-1]
			}
			at := fmt.Sprintf("%s:%d", strings.TrimPrefix(path, "../../"), i+1)
			fence := strings.HasPrefix(strings.TrimSpace(line), "```")
			switch {
			case fence && !inFence:
				assert.True(t, blankOrList(prev), "%s: a fence opens right after a line of prose:\n%s\n%s", at, prev, line)
				inFence = true
			case fence:
				inFence = false
			case inFence:
			case strings.HasPrefix(line, "|"):
				assert.True(t, blankOrList(prev) || strings.HasPrefix(prev, "|") || strings.HasPrefix(prev, "<!--"),
					"%s: a table starts right after a line of prose:\n%s\n%s", at, prev, line)
			default:
				assert.False(t, command.MatchString(line), "%s: a command outside a code block:\n%s", at, line)
			}
		}
		assert.False(t, inFence, "%s: a ``` fence is never closed", path)
	}
}

// blankOrList says whether a line may precede a block: a blank line, or a
// list item's line (a block indented under it).
func blankOrList(line string) bool {
	s := strings.TrimSpace(line)
	return s == "" || strings.HasPrefix(s, "- ") || strings.HasPrefix(line, "  ")
}

// docMarkdown lists the Markdown docs a reader opens, from this package's
// directory: the README, CONTRIBUTING.md, docs/*.md, exercises/README.md
// and every lesson's page.
func docMarkdown(t *testing.T) []string {
	t.Helper()
	paths := []string{"../../README.md", "../../CONTRIBUTING.md", "../../exercises/README.md"}
	for _, glob := range []string{"../../docs/*.md", "../../lessons/*/README.md"} {
		m, err := filepath.Glob(glob)
		require.NoError(t, err)
		paths = append(paths, m...)
	}
	for _, p := range paths {
		_, err := os.Stat(p)
		require.NoError(t, err)
	}
	return paths
}
