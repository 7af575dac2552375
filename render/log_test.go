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

// TestLineSaysWhatEachKindMeans: a move shows the note that explains it,
// and the kinds that are not a dead-lettering, a drop or an alert do not
// read like one (issue 20: a 406 printed as "Sending email", a stranded
// retry as "Moving to Dead Letter Queue", a dead-lettering's reason only
// in --json).
func TestLineSaysWhatEachKindMeans(t *testing.T) {
	var plain Style
	cases := []struct {
		e    lab.Event
		want string
	}{
		{lab.Event{Kind: lab.DeadLettered, Task: "C", Actor: "W", Queue: "q", To: "dlq", Note: "max retries reached"},
			"00:00.000 [W] 💀 Moving to Dead Letter Queue (dlq): C (max retries reached)"},
		{lab.Event{Kind: lab.Dropped, Task: "C", Actor: "W", Note: "permanent error"},
			"00:00.000 [W] 🗑️ Permanently failed, dropped: C (discarded on purpose: permanent error; no copy is kept)"},
		{lab.Event{Kind: lab.ChannelClosed, Task: "sC", Actor: "W", Note: "406 PRECONDITION_FAILED - unknown delivery tag 1"},
			"00:00.000 [W] 🚫 The broker closed the channel (after task sC): 406 PRECONDITION_FAILED - unknown delivery tag 1"},
		{lab.Event{Kind: lab.Refused, Task: "r11", Actor: "API", Queue: "email-queue", Note: "nacked: the queue is full"},
			"00:00.000 [API] ↩️ Publish refused by the broker: r11 -> email-queue (nacked: the queue is full)"},
		{lab.Event{Kind: lab.Stranded, Task: "dC", Actor: "Broker", Queue: "email-queue", To: "email-retry-queue", Note: "no TTL"},
			"00:00.000 [Broker] 🧊 Stranded in email-retry-queue, where nothing consumes it: dC (no TTL)"},
		{lab.Event{Kind: lab.Mailed, Task: "A1", Actor: "Mail-Server", Note: "email msg-1"},
			"00:00.000 [Mail-Server] ✉️ Mail sent to the customer of A1 (email msg-1)"},
		{lab.Event{Kind: lab.Mailed, Task: "a-5s", Actor: "M", Note: "To: a@example.com\nSubject: hi"},
			"00:00.000 [M] ✉️ Mail sent to the customer of a-5s\n             To: a@example.com\n             Subject: hi"},
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
		assert.Regexp(t, `(?m)^    (P\d+-?-(>>|x)P\d+|Note over P\d+): `, diagram.String(), "kind %q has no Mermaid line", k)
		assert.NotContains(t, diagram.String(), "unknown event kind", "kind %q has no Mermaid line", k)
	}
	bogus := lab.Event{Kind: "teleported", Task: "C", Actor: "Worker"}
	msg, _ := Message(bogus)
	assert.Contains(t, msg, `unknown event kind "teleported"`)
	var diagram strings.Builder
	Mermaid(&diagram, []lab.Event{bogus})
	assert.Contains(t, diagram.String(), "unknown event kind teleported")
}

// TestWhatHappenedCountsFastFails: an open breaker's fast fail is a
// delivery without an attempt; the closing table counts both, so "attempts
// 1" and a log line "delivery 7 of 15" add up (issue 20, Q12's b04).
func TestWhatHappenedCountsFastFails(t *testing.T) {
	events := []lab.Event{{Kind: lab.Started, Task: "b04", Attempt: 1}}
	for range 14 {
		events = append(events, lab.Event{Kind: lab.Rejected, Task: "b04"})
	}
	events = append(events, lab.Event{Kind: lab.Summary, Task: "b04", Fate: lab.FateDead, Attempt: 1},
		lab.Event{Kind: lab.Summary, Task: "b05", Fate: lab.FateDone, Attempt: 2})
	got := WhatHappened(events)
	assert.Equal(t, []string{"task", "fate", "attempts", "fast fails"}, got.Header)
	assert.Equal(t, [][]string{{"b04", "dead", "1", "14"}, {"b05", "done", "2", "0"}}, got.Rows)
	assert.Equal(t, []string{"task", "fate", "attempts"}, WhatHappened(events[:1]).Header, "no column without a breaker")
}

// TestEveryNoteShowsInTheLog: the text log shows an event's note whatever
// its kind (a note is why a task moved, failed or settled), so nothing a
// person needs is in --json only (issue 20: a dead-lettering's reason was).
func TestEveryNoteShowsInTheLog(t *testing.T) {
	var plain Style
	for _, k := range lab.Kinds {
		if k == lab.Summary {
			continue
		}
		e := lab.Event{Kind: k, Task: "C", Queue: "queue", To: "elsewhere", Actor: "Worker", Attempt: 2, DelayMs: 1000, Note: "the-reason"}
		assert.Contains(t, plain.Line(e), "the-reason", "kind %q", k)
	}
}

// TestRequeueSaysWhereTheMessageWent: a task put back on its own queue is
// at the tail only where nothing says otherwise (memory's requeue); a
// note that says where (a broker's requeue, at its original position) is
// never printed under "at the tail" (issue 28: Q19's log said the tail,
// its own note the original position).
func TestRequeueSaysWhereTheMessageWent(t *testing.T) {
	var plain Style
	tail := lab.Event{Kind: lab.Moved, Task: "C", Actor: "W", Queue: "q", To: "q"}
	assert.Equal(t, "00:00.000 [W] 🔄 Re-enqueuing at the tail of q: C", plain.Line(tail))
	back := tail
	back.Note = "basic.nack, requeue: back at its original position"
	assert.Equal(t, "00:00.000 [W] 🔄 Back on q: C (basic.nack, requeue: back at its original position)",
		plain.Line(back))
	head := tail
	head.Place = lab.AtHead // what the TUI draws: the place, not the note
	assert.Equal(t, "00:00.000 [W] 🔄 Re-enqueuing at the head of q: C", plain.Line(head))
}
