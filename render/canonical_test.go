package render

import (
	"strings"
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/stretchr/testify/assert"
)

func TestCanonicalIgnoresRacesWithinAnInstant(t *testing.T) {
	// Two interleavings of the same instant: the sequential worker moves C
	// to retry and starts D, while the retry worker picks C up.
	moved := lab.Event{TMs: 300, Actor: "Sequential-Worker", Kind: lab.Moved, Task: "C"}
	startD := lab.Event{TMs: 300, Actor: "Sequential-Worker", Kind: lab.Started, Task: "D"}
	retryC := lab.Event{TMs: 300, Actor: "Retry-Worker", Kind: lab.Started, Task: "C"}
	before := lab.Event{TMs: 200, Actor: "Sequential-Worker", Kind: lab.Failed, Task: "C"}
	a := Canonical([]lab.Event{before, moved, startD, retryC})
	b := Canonical([]lab.Event{before, moved, retryC, startD})
	assert.Equal(t, a, b)
	// C's move must precede its retry, and the earlier instant comes first.
	assert.Equal(t, []lab.Event{before, moved, retryC, startD}, a)
}

func TestCanonicalKeepsEachActorsOrder(t *testing.T) {
	e1 := lab.Event{TMs: 0, Actor: "Producer", Kind: lab.Enqueued, Task: "B"}
	e2 := lab.Event{TMs: 0, Actor: "Producer", Kind: lab.Enqueued, Task: "A"}
	e3 := lab.Event{TMs: 0, Actor: "A-Worker", Kind: lab.Started, Task: "B"}
	got := Canonical([]lab.Event{e1, e2, e3})
	assert.Equal(t, []lab.Event{e1, e3, e2}, got, "B's start waits for B's enqueue; Producer keeps B before A")
}

func TestTableMarkdown(t *testing.T) {
	var b strings.Builder
	Table{Title: "T", Header: []string{"a", "b"}, Rows: [][]string{{"x|y", "1"}}, Notes: []string{"n"}}.Markdown(&b)
	assert.Equal(t, "**T**\n\n| a | b |\n| --- | --- |\n| x\\|y | 1 |\n\nn\n\n", b.String())
}
