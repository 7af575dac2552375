package q21

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/render"
)

// TestWorkerTableFitsWithoutACluster lays the workers table out at 80
// columns from rows as part 1 fills it (the four workers' paces, a
// failover to another node, the outages measured on 3.10.8): no line is
// wider, no word or number is split (lessons' assertNoCuts) and no cell
// wraps: each worker reads on one line.
func TestWorkerTableFitsWithoutACluster(t *testing.T) {
	tb := workerTableOf([][]string{
		{Worker1, library(0, 1, 2).label, "n1 → n2", "40", "5", "3", "37", "60.1 s"},
		{Worker2, library(1, 2, 0).label, "n2", "45", "0", "0", "45", "-"},
		{Worker3, library(0).label, "n1 → n1", "20", "5", "2", "18", "120.1 s"},
		{LabWorker, labLoop.label, "n1 → n3", "30", "5", "1", "29", "0.3 s"},
	})
	l := render.LayoutFor(render.DefaultWidth)
	var out bytes.Buffer
	tb.Fit(&out, l)
	assert.Empty(t, tb.Cuts(l), "at 80 columns the table splits a word:\n%s", out.String())
	for _, row := range tb.Rows { // no cell wraps: a row reads on one line
		assert.Regexp(t, `(?m)^ *`+strings.Join(row, ` +`)+` *$`, out.String(), "%s wraps", row[0])
	}
	for _, line := range bytes.Split(out.Bytes(), []byte("\n")) {
		assert.LessOrEqual(t, render.Width(string(line)), render.DefaultWidth, "too wide:\n%s", out.String())
	}
}
