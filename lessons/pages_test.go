package lessons

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/exercises"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/template"
)

// TestEveryLessonHasAPage: each lesson of the registry has its page,
// lessons/qNN/README.md, headed with its ID and title, asking a question
// and saying what happens and what to try next, naming the lesson's own
// exercises; and no page stands for a lesson the registry does not hold.
func TestEveryLessonHasAPage(t *testing.T) {
	registered := map[string]bool{}
	for _, l := range All {
		registered[PagePath(l)] = true
		page, err := Page(l)
		require.NoError(t, err)
		checkPage(t, l, PagePath(l), page)
	}
	found, err := filepath.Glob(filepath.Join(root, "lessons", "*", "README.md"))
	require.NoError(t, err)
	for _, p := range found {
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		if rel = filepath.ToSlash(rel); rel == templatePage {
			continue
		}
		assert.True(t, registered[rel], "%s is the page of no lesson in lessons.All", rel)
	}
	// The template's page, copied with it, has the shape a page needs.
	page, err := os.ReadFile(filepath.Join(root, templatePage))
	require.NoError(t, err)
	checkPage(t, template.Lesson, templatePage, string(page))
}

// templatePage is the page lessons/template carries for a new lesson.
const templatePage = "lessons/template/README.md"

// checkPage holds lesson l's page (at path) to its shape: headed with
// the ID and title, a question, what happens, what to try next, and the
// lesson's own exercises named, no others.
func checkPage(t *testing.T, l lesson.Lesson, path, page string) {
	t.Helper()
	title, _, _ := strings.Cut(page, "\n")
	assert.Equal(t, "# "+l.ID+" · "+l.Title, title, "%s's first line is its ID and title", path)
	q, err := question(path, page)
	if assert.NoError(t, err) {
		assert.True(t, strings.HasSuffix(q, "?") || strings.Contains(q, "? "), "%s asks no question: %q", path, q)
	}
	for _, section := range []string{"\n## What happens\n", "\n## Try next\n"} {
		assert.Contains(t, page, section, "%s has no %q section", path, strings.TrimSpace(section))
	}
	var want, named []string
	for _, e := range exercises.All {
		if e.Lesson == l.ID {
			want = append(want, fmt.Sprint(e.Number()))
		}
	}
	for _, m := range regexp.MustCompile("`qlab ex (\\d+)`").FindAllStringSubmatch(page, -1) {
		named = append(named, m[1])
	}
	assert.Equal(t, want, named, "%s names the exercises of %s (qlab ex N), and only those", path, l.ID)
}

// TestQuestionReadsTheFirstParagraph: a question wrapped over lines is one
// line in the table, and a page without the section, or with an empty
// one, is an error naming the file.
func TestQuestionReadsTheFirstParagraph(t *testing.T) {
	l := All[0]
	q, err := Question(l)
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, PagePath(l)))
	require.NoError(t, err)
	_, rest, _ := strings.Cut(string(raw), questionHeading)
	para, _, _ := strings.Cut(rest, "\n\n")
	assert.Equal(t, strings.Join(strings.Fields(para), " "), q)
	assert.NotContains(t, q, "\n")

	_, err = Question(lesson.Lesson{ID: "Q00"})
	assert.ErrorContains(t, err, "lessons/q00/README.md")
}
