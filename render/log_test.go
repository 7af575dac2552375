package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/lab"
)

func TestLineShowsNotesAndTellsNewScheduledJobsFromRetries(t *testing.T) {
	var plain Style
	cases := []struct {
		e    lab.Event
		want string
	}{
		{lab.Event{TMs: 1000, Kind: lab.Scheduled, Task: "C", Actor: "W", To: "retry", Attempt: 1, DelayMs: 1000},
			"00:01.000 [W] 🕒 Scheduling retry in 1s -> retry: C"},
		{lab.Event{Kind: lab.Scheduled, Task: "m", Actor: "S", To: "mail.wait.4s", DelayMs: 5000, Note: "due 2026-02-08T11:39:51Z"},
			"00:00.000 [S] 🕒 Scheduling in 5s -> mail.wait.4s: m (due 2026-02-08T11:39:51Z)"},
		{lab.Event{Kind: lab.Scheduled, Task: "b20", Actor: "W", Queue: "email_queue", To: "email_queue", DelayMs: 5000},
			"00:00.000 [W] 🕒 Scheduling retry in 5s -> email_queue: b20"},
		{lab.Event{Kind: lab.Enqueued, Task: "m", Actor: "P", Queue: "q", Note: "n"},
			"00:00.000 [P] 📥 Enqueued task m -> q (n)"},
		{lab.Event{Kind: lab.Enqueued, Task: "A", Actor: "P", Queue: "q"},
			"00:00.000 [P] 📥 Enqueued task A -> q"},
		{lab.Event{Kind: lab.Moved, Task: "m", Actor: "R", Queue: "a", To: "b", Note: "hop"},
			"00:00.000 [R] 🔄 Moving task to b: m (hop)"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, plain.Line(c.e))
	}
}

// TestEveryKindRenders: every kind of the contract has a log line and a
// Mermaid line (a summary belongs to the closing table instead), and a
// kind nobody taught the renderers shows up as unknown rather than
// vanishing.
func TestEveryKindRenders(t *testing.T) {
	for _, k := range lab.Kinds {
		e := lab.Event{Kind: k, Task: "C", Queue: "queue", To: "dlq", Actor: "Worker", Attempt: 2, DelayMs: 1000, Note: "why"}
		msg, _ := Message(e)
		var diagram strings.Builder
		Mermaid(&diagram, []lab.Event{e})
		if k == lab.Summary {
			assert.Empty(t, msg, "a summary has no log line")
			continue
		}
		assert.NotEmpty(t, msg, "kind %q has no log line", k)
		assert.NotContains(t, msg, "unknown event kind", "kind %q has no log line", k)
		assert.Regexp(t, `(?m)^    (P\d+-?->>P\d+|Note over P\d+): `, diagram.String(), "kind %q has no Mermaid line", k)
		assert.NotContains(t, diagram.String(), "unknown event kind", "kind %q has no Mermaid line", k)
	}
	bogus := lab.Event{Kind: "teleported", Task: "C", Actor: "Worker"}
	msg, _ := Message(bogus)
	assert.Contains(t, msg, `unknown event kind "teleported"`)
	var diagram strings.Builder
	Mermaid(&diagram, []lab.Event{bogus})
	assert.Contains(t, diagram.String(), "unknown event kind teleported")
}
