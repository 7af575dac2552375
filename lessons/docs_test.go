package lessons

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/exercises"
	"github.com/queuelab/qlab/lab/labtest"
)

// root is the repository's root, seen from this package.
const root = ".."

// docs lists the Markdown a reader opens, relative to the root: the
// README, CONTRIBUTING.md, docs/*.md, exercises/README.md and every
// lesson's page.
func docs(t *testing.T) []string {
	t.Helper()
	list := []string{"README.md", "CONTRIBUTING.md", "exercises/README.md"}
	for _, glob := range []string{"docs/*.md", "lessons/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		require.NoError(t, err)
		for _, p := range m {
			rel, err := filepath.Rel(root, p)
			require.NoError(t, err)
			list = append(list, filepath.ToSlash(rel))
		}
	}
	return list
}

// docLine is one line of a doc, outside or inside a fence.
type docLine struct {
	n      int    // 1-based
	text   string // the line
	fence  string // the open fence's info string ("go", "sh", ""), if inside one
	fenced bool
}

// readDoc splits a doc into lines, marking which sit inside a ``` fence.
func readDoc(t *testing.T, doc string) []docLine {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, doc))
	require.NoError(t, err)
	var lines []docLine
	fenced, info := false, ""
	for i, l := range strings.Split(string(b), "\n") {
		if s := strings.TrimSpace(l); strings.HasPrefix(s, "```") {
			if !fenced {
				info = strings.TrimPrefix(s, "```")
			}
			fenced = !fenced
			continue
		}
		lines = append(lines, docLine{n: i + 1, text: l, fence: info, fenced: fenced})
	}
	return lines
}

var (
	// mdLink is a Markdown link's target.
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// repoPath is a path into the repository, as prose names one: a first
	// segment that is a top-level directory (checked below), not preceded
	// by a character that would make it part of a URL or a longer path.
	repoPath = regexp.MustCompile(`(?:^|[\s` + "`" + `("'])((?:\.ci|[a-z]+)/[A-Za-z0-9_./*<>…{}$-]*[A-Za-z0-9_*>…}-])`)
	// lessonNumber is a lesson named by number: Q07, Q10–Q17, qlab run 7,
	// make lesson-7, lesson 7, lessons 18–24, lessons/q07.
	lessonNumber = regexp.MustCompile(`\bQ(\d\d)(?:[–-]Q?(\d\d))?\b|qlab (?:run|tui|compare) (\d+)\b|lesson-(\d+)\b|\b[Ll]essons? (\d+)(?:[–-](\d+))?\b|lessons/q(\d\d)\b`)
	// exerciseNumber is an exercise named by number.
	exerciseNumber = regexp.MustCompile(`qlab ex (?:check |hint |reset |solution )?(\d+)\b|\b[Ee]xercises? (\d+)(?:[–-](\d+))?\b`)
	// heading is a Markdown heading, for anchors.
	heading = regexp.MustCompile(`^#{1,6} (.+)$`)
)

// placeholder says whether a path stands for many (exercises/NN_name,
// lessons/qNN/README.md, $TMPDIR/qlab-<pid>): it names no one file.
func placeholder(p string) bool {
	return strings.ContainsAny(p, "*<>…{}$") || strings.Contains(p, "NN")
}

// TestDocPathsExist: every path into the repository a doc names (a link's
// target, or a path in its prose such as `rabbit/topology.go`), every
// anchor a link points to, and every lesson and exercise number it names
// exist. A doc that outlives a moved file or a renumbered lesson fails
// here, naming the doc and the line.
func TestDocPathsExist(t *testing.T) {
	t.Parallel() // reads the docs only; started early, the broker suites need not wait for it
	top := map[string]bool{}
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() && e.Name() != "bin" {
			top[e.Name()] = true
		}
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(doc string) map[string]bool {
		if a, ok := anchors[doc]; ok {
			return a
		}
		a := map[string]bool{}
		for _, l := range readDoc(t, doc) {
			if m := heading.FindStringSubmatch(l.text); m != nil && !l.fenced {
				a[slug(m[1])] = true
			}
		}
		anchors[doc] = a
		return a
	}
	for _, doc := range docs(t) {
		for _, l := range readDoc(t, doc) {
			at := fmt.Sprintf("%s:%d", doc, l.n)
			if l.fenced && l.fence == "go" {
				continue // Go source: its names are code, checked by the compiler
			}
			for _, m := range mdLink.FindAllStringSubmatch(l.text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				rel := doc
				if file != "" {
					rel = filepath.ToSlash(filepath.Join(filepath.Dir(doc), file))
					if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
						t.Errorf("%s: links to %s, which does not exist", at, target)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(rel, ".md") && !anchorsOf(rel)[anchor] {
					t.Errorf("%s: links to %s, but %s has no heading #%s", at, target, rel, anchor)
				}
			}
			for _, m := range repoPath.FindAllStringSubmatch(l.text, -1) {
				p := strings.TrimRight(m[1], ".")
				first, _, _ := strings.Cut(p, "/")
				if !top[first] || placeholder(p) {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, p)); err != nil {
					t.Errorf("%s: names %s, which does not exist", at, p)
				}
			}
			if doc == templatePage {
				continue // the page of a lesson yet to be numbered
			}
			for _, m := range lessonNumber.FindAllStringSubmatch(l.text, -1) {
				for _, s := range m[1:] {
					if n, err := strconv.Atoi(s); err == nil {
						_, ok := Find(n)
						assert.True(t, ok, "%s: names lesson %d in %q; the lessons are 1–%d", at, n, m[0], len(All))
					}
				}
			}
			for _, m := range exerciseNumber.FindAllStringSubmatch(l.text, -1) {
				for _, s := range m[1:] {
					if n, err := strconv.Atoi(s); err == nil {
						assert.True(t, n >= 1 && n <= len(exercises.All), "%s: names exercise %d in %q; the exercises are 1–%d", at, n, m[0], len(exercises.All))
					}
				}
			}
		}
	}
}

// slug is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && isLetter(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isLetter keeps letters beyond ASCII in an anchor (é), and drops symbols
// (·, —, ×, …) as GitHub does.
func isLetter(r rune) bool {
	return strings.ContainsRune("àáâäçèéêëìíîïñòóôöùúûüß", r)
}

// TestDocCheckCatchesStaleDocs: the patterns the doc-path test reads find
// what they must (so a stale name cannot slip past a pattern that
// matches nothing), and skip what names no file.
func TestDocCheckCatchesStaleDocs(t *testing.T) {
	paths := func(s string) []string {
		var out []string
		for _, m := range repoPath.FindAllStringSubmatch(s, -1) {
			out = append(out, strings.TrimRight(m[1], "."))
		}
		return out
	}
	assert.Equal(t, []string{"lessons/q18/store.go"}, paths("Q18's `lessons/q18/store.go` is the full version."))
	assert.Equal(t, []string{"docs/lessons.md"}, paths("see docs/lessons.md."))
	assert.Empty(t, paths("https://github.com/rabbitmq/rabbitmq-server/issues/1"))
	assert.Empty(t, paths("import github.com/queuelab/qlab/lesson/rabbitenv"))
	assert.True(t, placeholder("exercises/NN_name/*.go"))
	assert.False(t, placeholder("lessons/q07/README.md"))

	numbers := func(s string) []string {
		var out []string
		for _, m := range lessonNumber.FindAllStringSubmatch(s, -1) {
			for _, g := range m[1:] {
				if g != "" {
					out = append(out, g)
				}
			}
		}
		return out
	}
	assert.Equal(t, []string{"10", "17"}, numbers("the broker lessons (Q10–Q17)"))
	assert.Equal(t, []string{"11", "20"}, numbers("what lessons 11–20 measured"))
	assert.Equal(t, []string{"26", "7", "13"}, numbers("qlab run 26, make lesson-7, lessons/q13"))
	assert.Empty(t, numbers("go test -run Q1 matches Q1x; seed 003"))

	assert.Equal(t, "measured-on-two-brokers-rabbitmq-3108-and-436", slug("Measured on two brokers (RabbitMQ 3.10.8 and 4.3.6)"))
	assert.Equal(t, "qlab-serve-the-seeds-http-apis", slug("`qlab serve`: the seeds' HTTP APIs"))
	assert.Equal(t, "q10--the-whole-flow", slug("Q10 · The whole flow"))
}

// contributingMarker is the CONTRIBUTING.md line the quoted template
// follows.
const contributingMarker = "<!-- quoted from lessons/template/template.go -->"

// TestContributingQuotesTheTemplate: the template CONTRIBUTING.md shows is
// lessons/template/template.go, byte for byte, so the recipe quotes code that
// compiles and runs. A stale quote fails with the command that fixes it;
// -update rewrites the quote from the file.
func TestContributingQuotesTheTemplate(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "lessons", "template", "template.go"))
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join(root, "CONTRIBUTING.md"))
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(doc), contributingMarker+"\n\n```go\n")
	require.True(t, ok, "CONTRIBUTING.md has no %q followed by a blank line and a ```go fence", contributingMarker)
	quoted, _, ok := strings.Cut(after, "\n```\n")
	require.True(t, ok, "the quoted template's fence is never closed")
	if labtest.Updating() {
		i := strings.Index(string(doc), after)
		out := string(doc[:i]) + string(src) + string(doc[i+len(quoted)+1:])
		require.NoError(t, os.WriteFile(filepath.Join(root, "CONTRIBUTING.md"), []byte(out), 0o644))
		return
	}
	if quoted+"\n" != string(src) {
		t.Fatalf("CONTRIBUTING.md quotes another lessons/template/template.go (the file is the source): " +
			"go test ./lessons -run Contributing -update")
	}
}
