package rabbitenv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// TestTopologyNoteWrapsWhole: the note under the queues table is one
// sentence, wrapped by the page as a whole; it was two pieces, the
// first broken short at "arguments" wherever the screen was 80 wide.
func TestTopologyNoteWrapsWhole(t *testing.T) {
	var b strings.Builder
	TopologyTable(flow.Topology{}, &rabbit.Session{}).Fit(&b, render.LayoutFor(0))
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
	topo := flow.Topology{Queues: []flow.Queue{
		{Name: "sequential.queue", DeadLetterTo: "sequential.dlq"},
		{Name: "sequential.dlq"},
	}}
	var b strings.Builder
	TopologyTable(topo, s).Fit(&b, render.LayoutFor(render.DefaultWidth))
	assert.Equal(t, 1, strings.Count(b.String(), "qlab-85f1ce."), b.String())
	assert.Contains(t, b.String(), "  sequential.queue ")
	assert.Contains(t, b.String(), " sequential.dlq\n")
}

// TestTopologyShowsExchangeDeadLetters: a queue that dead-letters through
// an exchange (seed 002's email-dlx) names the exchange and the queue it
// reaches; it was shown as "-", as if the broker dropped its messages.
func TestTopologyShowsExchangeDeadLetters(t *testing.T) {
	topo := flow.Topology{
		Queues: []flow.Queue{
			{Name: "email-queue", DeadLetterExchange: "email-dlx"},
			{Name: "email-dlq"},
			{Name: "orphan", DeadLetterExchange: "nowhere-dlx"},
		},
		Exchanges: []flow.Exchange{{Name: "email-dlx", Kind: flow.Fanout}, {Name: "nowhere-dlx", Kind: flow.Fanout}},
		Bindings:  []flow.Binding{{Exchange: "email-dlx", Queue: "email-dlq"}},
	}
	var b strings.Builder
	TopologyTable(topo, &rabbit.Session{}).Fit(&b, render.LayoutFor(render.DefaultWidth))
	assert.Contains(t, b.String(), "email-dlx → email-dlq", b.String())
	assert.Contains(t, b.String(), "nowhere-dlx → no queue bound", b.String())
}
