package lessons

import (
	"embed"
	"fmt"
	"strings"

	"github.com/queuelab/qlab/lesson"
)

// pages holds each lesson's page, lessons/qNN/README.md: its question,
// what happens, the note on what it measured, and what to try next. The
// README's lesson table takes each question from here, so a question is
// written once, on its lesson's page.
//
//go:embed q*/README.md
var pages embed.FS

// PagePath is where lesson l's page lives, relative to the repository's
// root: lessons/q07/README.md.
func PagePath(l lesson.Lesson) string {
	return "lessons/" + strings.ToLower(l.ID) + "/README.md"
}

// Page returns the text of lesson l's page, or an error naming the file
// when the lesson has none.
func Page(l lesson.Lesson) (string, error) {
	b, err := pages.ReadFile(strings.ToLower(l.ID) + "/README.md")
	if err != nil {
		return "", fmt.Errorf("lesson %s has no page %s: %w", l.ID, PagePath(l), err)
	}
	return string(b), nil
}

// questionHeading opens the section of a page that holds its question.
const questionHeading = "\n## Ask yourself\n\n"

// Question returns the question lesson l's page asks the student to keep
// in mind, as one line: the first paragraph under "## Ask yourself". It
// fails when the page or the section is missing or empty.
func Question(l lesson.Lesson) (string, error) {
	page, err := Page(l)
	if err != nil {
		return "", err
	}
	return question(PagePath(l), page)
}

// question reads the question of page, found at path.
func question(path, page string) (string, error) {
	_, rest, ok := strings.Cut(page, questionHeading)
	if !ok {
		return "", fmt.Errorf("%s has no %q section", path, strings.TrimSpace(questionHeading))
	}
	para, _, _ := strings.Cut(rest, "\n\n")
	q := strings.Join(strings.Fields(para), " ")
	if q == "" || strings.HasPrefix(q, "#") {
		return "", fmt.Errorf("%s: its %q section is empty", path, strings.TrimSpace(questionHeading))
	}
	return q, nil
}
