package rabbitenv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// TestTopologyNoteWrapsWhole: the note under the queues table is one
// sentence, wrapped by the page as a whole; it was two pieces, the
// first broken short at "arguments" wherever the screen was 80 wide.
func TestTopologyNoteWrapsWhole(t *testing.T) {
	var b strings.Builder
	TopologyTable(rabbit.Topology{}, &rabbit.Session{}).Fit(&b, render.LayoutFor(0))
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	var note []string
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "The run deleted") || len(note) > 0 {
			note = append(note, l)
		}
	}
	require.Greater(t, len(note), 2, b.String())
	for _, l := range note[:len(note)-1] {
		assert.Greater(t, render.Width(l), 60, "a line broken short:\n%s", b.String())
	}
}

// TestTopologyNamesThePrefixOnce: the run's prefix is in the title, once;
// the rows show the lesson's own queue names, which fit 80 columns whole.
func TestTopologyNamesThePrefixOnce(t *testing.T) {
	s := &rabbit.Session{Names: rabbit.Names{Prefix: "qlab-85f1ce.", Run: "qlab-85f1ce"}}
	topo := rabbit.Topology{Queues: []rabbit.Queue{
		{Name: "sequential.queue", DeadLetterTo: "sequential.dlq"},
		{Name: "sequential.dlq"},
	}}
	var b strings.Builder
	TopologyTable(topo, s).Fit(&b, render.LayoutFor(render.DefaultWidth))
	assert.Equal(t, 1, strings.Count(b.String(), "qlab-85f1ce."), b.String())
	assert.Contains(t, b.String(), "  sequential.queue ")
	assert.Contains(t, b.String(), " sequential.dlq\n")
}
