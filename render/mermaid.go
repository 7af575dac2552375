package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/queuelab/qlab/lab"
)

// Mermaid writes a run as a Mermaid sequence diagram: participants are the
// producer, queues, workers and mailer in order of first appearance; every
// hop of a task is one arrow, outcomes are notes. Events are taken in
// canonical order so the diagram of a deterministic run never changes.
func Mermaid(w io.Writer, events []lab.Event) {
	d := diagram{ids: map[string]string{}}
	for _, e := range Canonical(events) {
		d.add(e)
	}
	fmt.Fprintln(w, "sequenceDiagram")
	for _, p := range d.order {
		fmt.Fprintf(w, "    participant %s as %s\n", d.ids[p], p)
	}
	for _, l := range d.lines {
		fmt.Fprintln(w, "    "+l)
	}
}

type diagram struct {
	ids   map[string]string // participant name → mermaid-safe id
	order []string
	lines []string
}

// id returns the participant's mermaid id, declaring it on first use.
// Names like "Retry-Worker" are not valid ids, so ids are P1, P2, ….
func (d *diagram) id(name string) string {
	if id, ok := d.ids[name]; ok {
		return id
	}
	id := fmt.Sprintf("P%d", len(d.order)+1)
	d.ids[name] = id
	d.order = append(d.order, name)
	return id
}

func (d *diagram) arrow(from, to, arrow, text string) {
	d.lines = append(d.lines, fmt.Sprintf("%s%s%s: %s", d.id(from), arrow, d.id(to), text))
}

func (d *diagram) note(over, text string) {
	d.lines = append(d.lines, fmt.Sprintf("Note over %s: %s", d.id(over), text))
}

func (d *diagram) add(e lab.Event) {
	actor := e.Actor
	if actor == "" {
		actor = "lab"
	}
	t := e.Task
	switch e.Kind {
	case lab.Enqueued:
		d.arrow(actor, e.Queue, "->>", "enqueue "+t)
	case lab.Started, lab.Redelivered:
		d.arrow(e.Queue, actor, "->>", fmt.Sprintf("%s (attempt %d)", t, e.Attempt))
	case lab.Succeeded:
		d.note(actor, t+" done")
	case lab.Failed:
		d.note(actor, t+" failed: "+mermaidSafe(e.Note))
	case lab.Moved:
		if e.Place == lab.AtHead {
			d.arrow(actor, e.To, "->>", "move "+t+" to the head")
			return
		}
		d.arrow(actor, e.To, "->>", "move "+t)
	case lab.Scheduled:
		if e.Via != "" {
			d.arrow(actor, e.Via, "-->>", fmt.Sprintf("%s waits %s", t, delay(e.DelayMs)))
			d.arrow(e.Via, e.To, "-->>", t+" after the wait")
			return
		}
		d.arrow(actor, e.To, "-->>", fmt.Sprintf("%s after %s", t, delay(e.DelayMs)))
	case lab.DeadLettered:
		d.arrow(actor, e.To, "->>", "dead-letter "+t)
	case lab.Dropped:
		d.note(actor, t+" dropped on purpose")
	case lab.Alerted:
		d.note(actor, "alert mail about "+t)
	case lab.Breaker:
		d.note(actor, "breaker "+e.Note)
	case lab.Rejected:
		d.note(actor, t+" rejected by open breaker")
	case lab.Duplicate:
		d.note(actor, t+" duplicate skipped")
	case lab.Lost:
		over := e.Queue
		if over == "" {
			over = actor
		}
		d.note(over, t+" lost")
	case lab.Received:
		d.arrow(e.Queue, actor, "->>", "dead letter "+t)
	case lab.ChannelClosed:
		d.note(actor, "channel closed by the broker - "+mermaidSafe(e.Note))
	case lab.Refused:
		d.arrow(actor, e.Queue, "-x", t+" refused - "+mermaidSafe(e.Note))
	case lab.Stranded:
		if e.To != "" && e.To != e.Queue {
			d.arrow(e.Queue, e.To, "->>", t+" stranded")
		}
		d.note(where(e), t+" stranded, nothing consumes it")
	case lab.Mailed:
		d.note(actor, "mail to the customer of "+t)
	case lab.Phase:
		d.note(actor, mermaidSafe(e.Note))
	case lab.Summary:
		// the closing table's, not the diagram's
	default:
		d.note(actor, mermaidSafe(fmt.Sprintf("unknown event kind %s %s", e.Kind, t)))
	}
}

// mermaidSafe keeps a note on one line and free of characters Mermaid reads
// as syntax.
func mermaidSafe(s string) string {
	return strings.NewReplacer("\n", " ", ";", ",", "#", "", ":", " -").Replace(s)
}
