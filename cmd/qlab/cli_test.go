package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/render"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// qlab runs the CLI in-process and returns exit code, stdout and stderr.
func qlab(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// qlabChecked is qlab for a command that runs lessons: no goroutine the
// run started may outlive it (lessontest.NoGoroutineOutlives).
func qlabChecked(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	lessontest.NoGoroutineOutlives(t, func() { code, stdout, stderr = qlab(args...) })
	return code, stdout, stderr
}

func TestBadInputIsAUsageError(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"unknown lesson":    {[]string{"run", "99"}, "unknown lesson 99 (see qlab list)"},
		"not a number":      {[]string{"run", "seven"}, "unknown lesson seven"},
		"zero speed":        {[]string{"run", "1", "--speed", "0"}, "--speed must be a positive number"},
		"negative speed":    {[]string{"run", "1", "--speed", "-3"}, "--speed must be a positive number"},
		"unknown flag":      {[]string{"run", "1", "--bogus"}, "flag provided but not defined: --bogus"},
		"bad speed value":   {[]string{"run", "1", "--speed", "fast"}, `invalid value "fast" for flag --speed`},
		"speed too high":    {[]string{"run", "1", "--speed", "1e9"}, "--speed must be between 0.01 and 1000"},
		"speed too low":     {[]string{"run", "1", "--speed", "0.001"}, "--speed must be between 0.01 and 1000"},
		"list bad backend":  {[]string{"list", "--backend", "nats"}, "--backend must be inmem or rabbit"},
		"bad prefix":        {[]string{"run", "10", "--names", "exact", "--prefix", "a.b"}, "may hold only letters, digits, - and _"},
		"old spelling seed": {[]string{"run", "10", "--names", "seed", "--prefix", "a.b"}, "may hold only letters, digits, - and _"},
		"prefix, no seed":   {[]string{"run", "10", "--prefix", "alice"}, "--prefix goes with --names exact"},
		"bad backend":       {[]string{"run", "1", "--backend", "kafka"}, "--backend must be inmem or rabbit"},
		"no lesson":         {[]string{"run"}, "run takes one lesson number"},
		"two lessons":       {[]string{"run", "1", "2"}, "run takes one lesson number"},
		"bad fail rate":     {[]string{"run", "1", "--fail-rate", "2"}, "--fail-rate must be between 0 and 1"},
		"unknown command":   {[]string{"frobnicate"}, `unknown command "frobnicate"`},
		"no rabbit yet":     {[]string{"run", "1", "--backend", "rabbit"}, "lesson 1 has no rabbit variant (it runs on: inmem)"},
		"tui bad lesson":    {[]string{"tui", "99"}, "unknown lesson 99 (see qlab list)"},
		"tui bad speed":     {[]string{"tui", "1", "--speed", "0"}, "--speed must be a positive number"},
		"tui two lessons":   {[]string{"tui", "1", "2"}, "tui takes at most one lesson number"},
		"tui bad backend":   {[]string{"tui", "--backend", "kafka"}, "--backend must be inmem or rabbit"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := qlab(c.args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, c.want)
			assert.Empty(t, out, "errors go to stderr only")
		})
	}
}

func TestTuiWithoutATerminalSaysSo(t *testing.T) {
	code, out, errOut := qlab("tui", "1")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "tui needs a terminal; for a transcript use qlab run N")
	assert.Empty(t, out)
}

func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"run", "--help"}, {"list", "-h"}, {"tui", "--help"}} {
		code, out, _ := qlab(args...)
		assert.Equal(t, exitOK, code, args)
		assert.Contains(t, out, "Usage", args)
	}
}

// TestHelpFits: every command's help, which a student reads in a
// terminal of 80 columns, fits it.
func TestHelpFits(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"list"}, {"run"}, {"broker"}, {"broker", "cluster"},
		{"compare"}, {"tui"}, {"ex"}, {"dlq"}, {"serve"}, {"class"}} {
		code, out, _ := qlab(append(args, "--help")...)
		assert.Equal(t, exitOK, code, args)
		for _, line := range strings.Split(out, "\n") {
			assert.LessOrEqual(t, render.Width(line), render.DefaultWidth, "%v --help: %q", args, line)
		}
	}
}

func TestRunPrintsNoticeLogAndTable(t *testing.T) {
	code, out, errOut := qlab("run", "1", "--speed", "1000", "--no-color")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "What to notice:")
	assert.Contains(t, out, "[Sequential-Worker] ▶ Starting task: A")
	assert.Contains(t, out, "What happened")
	assert.NotContains(t, out, "\x1b[", "--no-color prints no escape codes")
}

func TestRunJSONIsOnlyEvents(t *testing.T) {
	code, out, errOut := qlab("run", "7", "--json", "--speed", "1000")
	if code == exitUsage && strings.Contains(errOut, "unknown lesson") {
		code, out, errOut = qlab("run", "1", "--json", "--speed", "1000")
	}
	require.Equal(t, exitOK, code, errOut)
	sc := bufio.NewScanner(strings.NewReader(out))
	seq, summaries := 0, 0
	for sc.Scan() {
		var e lab.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "every stdout line is one JSON event: %q", sc.Text())
		seq++
		assert.Equal(t, seq, e.Seq)
		assert.Equal(t, lab.InMem, e.Backend)
		if e.Kind == lab.Summary {
			summaries++
			assert.NotEmpty(t, e.Fate)
		}
	}
	assert.Equal(t, 4, summaries, "one summary per task A–D")
}

func TestListShowsEveryLesson(t *testing.T) {
	code, out, _ := qlab("list", "--numbers")
	require.Equal(t, exitOK, code)
	assert.Equal(t, len(lessons.All), strings.Count(out, "\n"))
	code, out, _ = qlab("list")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "lessons/qNN/README.md", "the list says where a lesson's page is")
}

// TestReadmeLessonTable keeps the README's lesson table generated from the
// registry and the lessons' pages (their questions):
// `go test ./cmd/qlab -run ReadmeLessonTable -update` rewrites it (`qlab
// list --markdown` prints the same rows). A stale table fails with a short
// diff, the rows that differ cut near where they differ, and that command.
func TestReadmeLessonTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	const begin, end = "<!-- lessons:begin -->\n", "<!-- lessons:end -->"
	s := string(readme)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	require.True(t, i >= 0 && j > i, "README needs the lessons:begin/end markers")
	want, err := lessonTable(lessons.All)
	require.NoError(t, err)
	got := s[i+len(begin) : j]
	if labtest.Updating() {
		require.NoError(t, os.WriteFile("../../README.md", []byte(s[:i+len(begin)]+want+s[j:]), 0o644))
		return
	}
	if got != want {
		t.Fatalf("README lesson table is stale (- README, + registry and pages):\n%s"+
			"rewrite it with: go test ./cmd/qlab -run ReadmeLessonTable -update", rowDiff(got, want, 5))
	}
}

// rowDiff lists, for up to limit rows where got and want differ, both
// versions cut to the text around their first difference, and how many
// more rows differ.
func rowDiff(got, want string, limit int) string {
	gotRows, wantRows := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	shown, more := 0, 0
	for k := range max(len(wantRows), len(gotRows)) {
		g, w := row(gotRows, k), row(wantRows, k)
		if g == w {
			continue
		}
		if shown == limit {
			more++
			continue
		}
		shown++
		fmt.Fprintf(&b, "row %d:\n  - %s\n  + %s\n", k+1, around(g, w), around(w, g))
	}
	if more > 0 {
		fmt.Fprintf(&b, "and %d more rows\n", more)
	}
	return b.String()
}

// q11 is lesson 11, which has no exercise.
func q11(t *testing.T) lesson.Lesson {
	l, err := lessons.Parse("11")
	require.NoError(t, err)
	return l
}

// around is a's text near where it first differs from b: 60 bytes either
// side, so a change deep in a long row shows.
func around(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from, to := max(0, i-60), min(len(a), i+60)
	return strings.ToValidUTF8("…"+a[from:to]+"…", "")
}

// row is rows[k], or "(none)" past the end.
func row(rows []string, k int) string {
	if k < len(rows) {
		return rows[k]
	}
	return "(none)"
}

// lineOf is the 1-based line of text where s first appears.
func lineOf(text, s string) int {
	return strings.Count(text[:strings.Index(text, s)], "\n") + 1
}

// TestReadmeLessonTableDiffIsShort: a stale table's failure names the rows
// that differ, each cut short, not the whole table twice.
func TestReadmeLessonTableDiffIsShort(t *testing.T) {
	want, err := lessonTable(lessons.All)
	require.NoError(t, err)
	stale := strings.Replace(want, "Where does C go", "Where did C go", 1)
	stale = strings.Replace(stale, "- **25** ", "- **26** ", 1)
	d := rowDiff(stale, want, 5)
	assert.Contains(t, d, fmt.Sprintf("row %d:\n  - …", lineOf(want, "Where does C go")))
	assert.Contains(t, d, "Where did C go")
	assert.Contains(t, d, fmt.Sprintf("row %d:", lineOf(want, "- **25** ")))
	assert.Equal(t, 6, strings.Count(d, "\n"), d)
	assert.Less(t, len(d), 1200, "the diff stays short")
	rows := strings.Repeat("| x |\n", 30)
	assert.Contains(t, rowDiff(rows, strings.ReplaceAll(rows, "x", "y"), 5), "and 25 more rows")
}

func TestRunMermaidPrintsADiagram(t *testing.T) {
	code, out, errOut := qlab("run", "1", "--mermaid", "--speed", "1000")
	require.Equal(t, exitOK, code, errOut)
	assert.True(t, strings.HasPrefix(out, "sequenceDiagram\n"), out)
	assert.Contains(t, out, "participant P1 as Producer")
	code, _, errOut = qlab("run", "1", "--mermaid", "--json")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "pick one")
}

func TestPickBackendFallsBackOnlyWhenNotAsked(t *testing.T) {
	q11, err := lessons.Parse("11")
	require.NoError(t, err)
	q1, err := lessons.Parse("1")
	require.NoError(t, err)

	fs := newFlagSet("run", "")
	backend := fs.String("backend", "inmem", "")
	require.NoError(t, fs.Parse(nil))
	b, err := pickBackend(fs, q11, *backend)
	require.NoError(t, err)
	assert.Equal(t, lab.Rabbit, b, "qlab run 11 runs on the only backend lesson 11 has")

	fs = newFlagSet("run", "")
	backend = fs.String("backend", "inmem", "")
	require.NoError(t, fs.Parse([]string{"--backend", "inmem"}))
	_, err = pickBackend(fs, q11, *backend)
	assert.ErrorContains(t, err, "lesson 11 has no inmem variant", "an explicit backend is never overridden")

	fs = newFlagSet("run", "")
	backend = fs.String("backend", "rabbit", "")
	require.NoError(t, fs.Parse([]string{"--backend", "rabbit"}))
	_, err = pickBackend(fs, q1, *backend)
	assert.ErrorContains(t, err, "lesson 1 has no rabbit variant")
}

func TestHelpSpellsFlagsWithTwoDashes(t *testing.T) {
	code, out, _ := qlab("run", "--help")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "  --speed float\n")
	assert.NotRegexp(t, `(?m)^  -[a-z]`, out)
}

func TestListAlignsLongTitles(t *testing.T) {
	code, out, _ := qlab("list")
	require.Equal(t, exitOK, code)
	lines := strings.Split(out, "\n")
	col := strings.Index(lines[0], "BACKENDS")
	for i, l := range lessons.All { // one row per lesson, in order (numbers may have gaps)
		row := lines[i+1]
		assert.Equal(t, col, len([]rune(row))-len([]rune(backendList(l))), "row %q", row)
	}
}

func TestCompareAcceptsNoColor(t *testing.T) {
	code, _, errOut := qlab("compare", "1", "--no-color")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "lesson 1 runs on inmem only", "got past the flags")
}

// TestTuiDiscoveryReportsABadBrokerURL: with RABBITMQ_URL set and failing,
// the TUI says what is wrong with it (password hidden), not the generic
// advice, and never falls back to the default broker.
func TestTuiDiscoveryReportsABadBrokerURL(t *testing.T) {
	t.Setenv("RABBITMQ_URL", "amqp://guest:secret@127.0.0.1:1/")
	url, err := brokerDiscovery(t.Context())
	require.Error(t, err)
	assert.Empty(t, url)
	assert.Contains(t, err.Error(), "RABBITMQ_URL")
	assert.Contains(t, err.Error(), "refused")
	assert.NotContains(t, err.Error(), "secret")
}

// TestRunEndsWithWhatToDoNext: every finished run points to the next
// lesson, and a lesson with both backends to the other one and compare,
// spelled the way qlab was started: after make, make lesson-8 (a bare
// qlab run 8 is "command not found" there); from go run, go run.
func TestRunEndsWithWhatToDoNext(t *testing.T) {
	t.Setenv("QLAB_VIA", "make")
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, Main(t.Context(), []string{"run", "7", "--speed", "50", "--no-color"}, &out, &errOut), errOut.String())
	assert.True(t, strings.HasSuffix(out.String(), "Next: make lesson-8   (Dead-letter queue instead of dropping)\n"), out.String())

	t.Setenv("QLAB_VIA", "")
	q12, _ := lessons.Parse("12")
	steps := nextSteps(q12, lab.InMem, invoked()) // the test binary is built under go-build, as go run's is
	assert.Contains(t, steps, "go run ./cmd/qlab run 12 --backend rabbit")
	assert.Contains(t, steps, "go run ./cmd/qlab compare 12")
	assert.Contains(t, steps, "Next: go run ./cmd/qlab run 13")
	assert.Contains(t, steps, "Read: lessons/q12/README.md   (the question, what was measured)\n"+
		"Write: go run ./cmd/qlab ex 9   (the mechanism yourself, checked as you save)\n",
		"run, read, write: the page, then the lesson's exercise")
	assert.NotContains(t, nextSteps(q11(t), lab.Rabbit, invoked()), "Write:", "lesson 11 has no exercise")

	steps = nextSteps(q12, lab.InMem, invocation{make: true})
	assert.Contains(t, steps, `make lesson-12 FLAGS="--backend rabbit"`)
	assert.Contains(t, steps, "make compare-12")
	assert.Contains(t, nextSteps(q12, lab.InMem, invocation{prog: "bin/qlab"}), "Next: bin/qlab run 13")

	last := lessons.All[len(lessons.All)-1] // after it, the TUI and compare, spelled as they work
	assert.Contains(t, nextSteps(last, lab.InMem, invocation{make: true}), "make tui N=N replays lesson N, make compare-N measures")
	assert.Contains(t, nextSteps(last, lab.InMem, invocation{prog: "bin/qlab"}), "bin/qlab tui N replays lesson N, bin/qlab compare N measures")
}
