package render

import (
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
