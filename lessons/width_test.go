package lessons

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/render"
)

// TestWidth: what `qlab run N` prints where stdout is no terminal (a pipe,
// a file, a terminal that does not say) fits 100 columns on every line,
// measured as a terminal shows it (an emoji takes two): the heading and
// what to notice, the log, the tables and their notes. Every lesson, on
// every backend it has (the broker's when one answers).
func TestWidth(t *testing.T) {
	for _, l := range All {
		for _, b := range l.Backends() {
			t.Run(l.ID+"/"+string(b), func(t *testing.T) {
				t.Parallel()
				events, res := widthRun(t, b, l)
				var out bytes.Buffer
				page := render.Page{W: &out, Layout: render.LayoutFor(0)}
				page.Prose(fmt.Sprintf("%s · %s  (%s, speed 1×)", l.ID, l.Title, b), "  ")
				page.Prose("What to notice: "+l.NoticeFor(b), "")
				for _, e := range events {
					page.Emit(e)
				}
				page.Results(events, res.Tables)
				assertFits(t, out.String(), render.MaxWidth)
				heading, _, _ := strings.Cut(out.String(), "\n\n")
				assertFits(t, heading, render.DefaultWidth) // prose wraps to 80
				assertNoCuts(t, events, res.Tables)
			})
		}
	}
}

// widthRun is lesson l's default run on backend b: in memory, or the
// recording of its default run on the test broker (the 4.3 node for a
// lesson that needs it) that TestEveryTaskAccountedFor reads too.
func widthRun(t *testing.T, b lab.Backend, l lesson.Lesson) ([]lab.Event, lesson.Result) {
	t.Helper()
	if b != lab.Rabbit {
		return lessontest.RunInMem(t, l, lesson.Options{})
	}
	return lessontest.Recorded(t, testLine(l), l, "default", recordedOpts(t, l, "default"))
}

// assertNoCuts fails for every table of a run that, at 80 columns,
// splits a word or a number inside (render.Table.Cuts): a cell may wrap at
// a space or after punctuation, never in the middle of "strategy",
// "24.84s" or a queue name's last part.
func assertNoCuts(t *testing.T, events []lab.Event, tables []render.Table) {
	t.Helper()
	for _, tb := range append([]render.Table{render.WhatHappened(events)}, tables...) {
		if cuts := tb.Cuts(render.LayoutFor(render.DefaultWidth)); len(cuts) > 0 {
			var out bytes.Buffer
			tb.Fit(&out, render.LayoutFor(render.DefaultWidth))
			t.Errorf("at 80 columns, table %q splits %q inside:\n%s", tb.Title, cuts, out.String())
		}
	}
}

// assertFits fails for every line of text wider than width columns.
func assertFits(t *testing.T, text string, width int) {
	t.Helper()
	for i, line := range strings.Split(text, "\n") {
		assert.LessOrEqual(t, render.Width(line), width, "line %d is too wide:\n%s", i+1, line)
	}
}

// TestPagesFit: what a student reads in Markdown fits 80 columns without
// a word broken: every line of every doc (the README, CONTRIBUTING.md,
// docs/*.md, exercises/README.md, each lesson's page), tables and code
// blocks included, a tab counted as 4. A line that is one unbreakable word
// (a long link) is the exception, and so is a verbatim line.
func TestPagesFit(t *testing.T) {
	for _, doc := range docs(t) {
		for _, l := range readDoc(t, doc) {
			w := render.Width(strings.ReplaceAll(l.text, "\t", "    "))
			if w <= render.DefaultWidth || verbatim(doc, l.text) {
				continue
			}
			s := strings.TrimLeft(strings.TrimSpace(l.text), "-*0123456789. ")
			if !strings.Contains(s, " ") {
				continue // one word, too long for any line
			}
			t.Errorf("%s:%d is %d columns wide, over %d:\n%s", doc, l.n, w, render.DefaultWidth, l.text)
		}
	}
}

// verbatim reports whether line of doc is one a test compares byte for
// byte with what qlab prints, so it is as wide as qlab prints it:
// TestReadmeSpeedError's --speed 500 error, one line on stderr.
func verbatim(doc, line string) bool {
	return doc == "docs/broker.md" && strings.HasPrefix(line, "qlab: --speed 500 is too fast for the broker: ")
}

// TestLessonCommentsFit: a lesson's Go files are pages too, read top-down,
// so their comments fit 80 columns (a tab counted as 4). Lines indented
// with a tab after // are drawings and code, laid out by hand.
func TestLessonCommentsFit(t *testing.T) {
	var files []string
	for _, pattern := range []string{"q*/*.go", "../seeds/*/*.go"} {
		found, err := filepath.Glob(pattern)
		assert.NoError(t, err)
		files = append(files, found...)
	}
	assert.NotEmpty(t, files)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		assert.NoError(t, err)
		for i, line := range strings.Split(string(src), "\n") {
			s := strings.TrimSpace(line)
			if !strings.HasPrefix(s, "//") || strings.HasPrefix(s, "//\t") {
				continue
			}
			if w := render.Width(strings.ReplaceAll(line, "\t", "    ")); w > render.DefaultWidth {
				t.Errorf("%s:%d is %d columns wide, over %d:\n%s", f, i+1, w, render.DefaultWidth, line)
			}
		}
	}
}
