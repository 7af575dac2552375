package exercises

import (
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeTableIsTheList: exercises/README.md's table has one row per
// exercise of All, in order, each naming the exercise's own lesson, so a
// renumbered or added exercise cannot leave the page behind.
func TestReadmeTableIsTheList(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	rows := regexp.MustCompile(`(?m)^\| (\d+) \| (Q\d\d) \| .+ \|$`).FindAllStringSubmatch(string(b), -1)
	require.Len(t, rows, len(All), "exercises/README.md lists %d exercises; All has %d", len(rows), len(All))
	for i, e := range All {
		assert.Equal(t, fmt.Sprint(e.Number()), rows[i][1], "row %d", i+1)
		assert.Equal(t, e.Lesson, rows[i][2], "exercise %d (%s) is lesson %s's", e.Number(), e.Dir, e.Lesson)
	}
}
