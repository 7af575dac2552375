package q13

import (
	"fmt"
	"strings"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lessons/versions"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// q13ParkedTable lists what ended up in the DLQ.
func q13ParkedTable(parked []q13Parked, counters, note string) render.Table {
	t := render.Table{
		Title:  "What the DLQ holds",
		Header: []string{"task", counters, "last error"},
		Notes:  []string{note},
	}
	for _, p := range parked {
		t.Rows = append(t.Rows, []string{p.task, p.counts, p.reason})
	}
	return t
}

// q13ParkedIn describes the messages read back from the DLQ: in memory
// by their attempt field and the worker's note of the last error; on the
// broker by what their headers kept.
func q13ParkedIn(dlq []flow.Delivery, lastErr map[string]string, onBroker bool) []q13Parked {
	var out []q13Parked
	for _, d := range dlq {
		if !onBroker {
			out = append(out, q13Parked{task: d.Task, counts: fmt.Sprintf("attempt %d", d.Attempt), reason: lastErr[d.Task]})
			continue
		}
		c := readCounters(d.Headers)
		reason := rabbit.RetryReason(d.Headers)
		if reason == "" {
			reason = "(not kept: x-death records no error)"
		}
		out = append(out, q13Parked{task: d.Task, counts: fmt.Sprintf("%d / %d, %d", c.rejects, c.expired, c.retries), reason: reason})
	}
	return out
}

// q13CounterTable shows, for the poison task of each loop, what every
// counter read on each of its deliveries: the demonstration of why a
// worker that republishes keeps its own count.
func q13CounterTable(version, poison string, readings *q13Readings) render.Table {
	series := func(task string, f func(q13Reading) string) string {
		var out []string
		for _, r := range readings.of(task) {
			out = append(out, f(r))
		}
		return strings.Join(out, " ")
	}
	first := func(r q13Reading) string { return fmt.Sprint(r.first) }
	rejects := func(r q13Reading) string { return fmt.Sprint(r.rejects) }
	expired := func(r q13Reading) string { return fmt.Sprint(r.expired) }
	retries := func(r q13Reading) string { return fmt.Sprint(r.retries) }
	byHeader := q13Loops[1].prefix + poison
	return render.Table{
		Title:  fmt.Sprintf("What the counters read on each delivery of %s and %s (RabbitMQ %s)", poison, byHeader, version),
		Header: []string{"task", "counter", "per delivery"},
		Rows: [][]string{
			{poison, "x-death rejects (attempt - 1)", series(poison, rejects)},
			{poison, "x-death expiries in email_queue_wait", series(poison, expired)},
			{poison, "x-death[0].count ?? 1 (the service's reading)", series(poison, first)},
			{byHeader, rabbit.RetryCountHeader + " (attempt - 1)", series(byHeader, retries)},
			{byHeader, "x-death rejects", series(byHeader, rejects)},
			{byHeader, "x-death expiries, header copied back", series(byHeader, expired)},
		},
		Notes: q13CounterNotes(version, readings.of(byHeader)),
	}
}

// q13CounterNotes says what the header loop's deliveries show about the
// broker's x-death, from what was measured rather than what is expected,
// then what each version the lab measured does (versions).
func q13CounterNotes(version string, rs []q13Reading) []string {
	if len(rs) < 3 {
		return nil
	}
	var rejects int64
	for _, r := range rs {
		rejects += r.rejects
	}
	var notes []string
	if rejects == 0 {
		notes = append(notes, "Run 2 never rejects, so x-death counts no rejects: a worker counting rejects would retry forever.")
	}
	last := rs[len(rs)-1].expired
	switch {
	case last == int64(len(rs)-1):
		notes = append(notes, "The x-death copied back into each republished message kept counting: this broker reads a client's x-death "+
			"(3.13.0-3.13.2 did not): do not build on it.")
	case last == 1:
		notes = append(notes, "The x-death copied back restarted at 1 every round: this broker ignores a client's x-death.")
	default:
		notes = append(notes, fmt.Sprintf("The x-death copied back ended at %d after %d rounds.", last, len(rs)-1))
	}
	return append(notes, rabbit.RetryCountHeader+" counted every round: the worker writes it and reads it back; the broker only carries it.",
		versions.XDeathRepublished.Note(version))
}
