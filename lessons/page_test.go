package lessons

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxPageLines is about how long a lesson may be before it must say why
// (issue 30: a lesson is a page, read top to bottom).
const maxPageLines = 400

// whySoLong opens the package comment's paragraph that says why.
const whySoLong = "Why so long:"

// TestLongLessonSaysWhy: a lesson whose package (its files, tests aside)
// runs over maxPageLines says why in its package comment, in a paragraph
// that opens with whySoLong.
func TestLongLessonSaysWhy(t *testing.T) {
	for _, l := range All {
		dir := l.Slug()
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, "lesson %s lives in lessons/%s", l.ID, dir)
		lines, doc := 0, ""
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			lines += bytes.Count(src, []byte("\n"))
			parsed, err := parser.ParseFile(token.NewFileSet(), f, src, parser.PackageClauseOnly|parser.ParseComments)
			require.NoError(t, err)
			if parsed.Doc != nil {
				doc += parsed.Doc.Text()
			}
		}
		if lines > maxPageLines {
			assert.Contains(t, doc, "\n"+whySoLong, "lessons/%s has %d lines (over %d): its package comment says why, in a paragraph opening %q",
				dir, lines, maxPageLines, whySoLong)
		}
	}
}
