package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/queuelab/qlab/lab"
)

// Style is how log lines look: ANSI colour on or off, and the width they
// wrap to (0: no wrapping).
type Style struct {
	Color bool
	Width int
}

const (
	dim   = "\x1b[2m"
	bold  = "\x1b[1m"
	red   = "\x1b[31m"
	green = "\x1b[32m"
	amber = "\x1b[33m"
	reset = "\x1b[0m"
)

func (s Style) paint(code, text string) string {
	if !s.Color || text == "" {
		return text
	}
	return code + text + reset
}

// Stamp formats lesson time in ms as mm:ss.mmm.
func Stamp(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	return fmt.Sprintf("%02d:%02d.%03d", int(d/time.Minute), int(d%time.Minute/time.Second), ms%1000)
}

// Line renders e as a seed-style log line:
//
//	00:01.000 [Retry-Worker] ♻️ Retrying task: C (attempt 2)
//
// Multi-line events (an alert mail) and, when s.Width is set, lines wider
// than it continue on indented lines. Summary events render as "" (they
// belong to the table).
func (s Style) Line(e lab.Event) string {
	msg, tone := Message(e)
	if msg == "" {
		return ""
	}
	actor := e.Actor
	if actor == "" {
		actor = "lab"
	}
	head := Stamp(e.TMs) + " [" + actor + "] "
	first, rest := 1<<30, 1<<30
	if s.Width > 0 {
		first, rest = max(s.Width-Width(head), 20), s.Width-len(logIndent)
	}
	lines, _ := wrap(msg, first, rest, logIndent)
	lines[0] = s.paint(dim, Stamp(e.TMs)) + " " + s.paint(bold, "["+actor+"]") + " " + s.paint(tone, lines[0])
	for i := 1; i < len(lines); i++ {
		lines[i] = logIndent + s.paint(tone, strings.TrimPrefix(lines[i], logIndent))
	}
	return strings.Join(lines, "\n")
}

// logIndent starts a log line's continuation lines, under the actor.
const logIndent = "             "

// Message is the text of e without stamp and actor, and the colour it is
// painted in. It is "" for events that have no log line (summaries).
func Message(e lab.Event) (text, tone string) {
	t := e.Task
	switch e.Kind {
	case lab.Enqueued:
		return fmt.Sprintf("📥 Enqueued task %s -> %s", t, e.Queue) + withNote(e.Note), ""
	case lab.Started:
		if e.Note != "" { // the emitter says what this attempt is (a redelivery is not a retry)
			return fmt.Sprintf("▶ Starting task again: %s (attempt %d, %s)", t, e.Attempt, e.Note), ""
		}
		if e.Attempt > 1 {
			return fmt.Sprintf("♻️ Retrying task: %s (attempt %d)", t, e.Attempt), amber
		}
		return "▶ Starting task: " + t, ""
	case lab.Succeeded:
		return "✅ Done: " + t + withNote(e.Note), green
	case lab.Failed:
		return fmt.Sprintf("❌ Error processing task %s: %s", t, e.Note), red
	case lab.Moved:
		if e.Queue == e.To && e.Note == "" { // lab.Place says where
			return fmt.Sprintf("🔄 Re-enqueuing at the %s of %s: %s", placeWord(e.Place), e.To, t), amber
		}
		if e.Queue == e.To { // the note says where, in the broker's own terms
			return fmt.Sprintf("🔄 Back on %s: %s", e.To, t) + withNote(e.Note), amber
		}
		return fmt.Sprintf("🔄 Moving task to %s: %s", e.To, t) + withNote(e.Note), amber
	case lab.Scheduled:
		if e.Queue == "" && e.Attempt == 0 { // from no queue, before any attempt: a new scheduled job, not a retry
			return fmt.Sprintf("🕒 Scheduling in %s -> %s: %s", delay(e.DelayMs), e.To, t) + withNote(e.Note), amber
		}
		return fmt.Sprintf("🕒 Scheduling retry in %s%s -> %s: %s", delay(e.DelayMs), via(e.Via), e.To, t) + withNote(e.Note), amber
	case lab.DeadLettered:
		return fmt.Sprintf("💀 Moving to Dead Letter Queue (%s): %s", e.To, t) + withNote(e.Note), red
	case lab.Dropped:
		why := "discarded on purpose: no copy is kept"
		if e.Note != "" {
			why = "discarded on purpose: " + e.Note + "; no copy is kept"
		}
		return fmt.Sprintf("🗑️ Permanently failed, dropped: %s (%s)", t, why), red
	case lab.Alerted:
		return "📧 Sending email\n" + e.Note, amber
	case lab.Breaker:
		return "🔌 Circuit breaker " + e.Note + withTask(t), amber
	case lab.Rejected:
		return "⛔ Rejected by the open breaker: " + t + withNote(e.Note), amber
	case lab.Duplicate:
		return "⏭️ Duplicate delivery skipped: " + t + withNote(e.Note), ""
	case lab.Redelivered:
		return "📬 Redelivered (the same message again, not a retry): " + t + withNote(e.Note), amber
	case lab.Lost:
		return "🕳️ Lost: " + t + withNote(e.Note), red
	case lab.Received:
		return "📩 Received dead letter: " + t + withNote(e.Note), ""
	case lab.ChannelClosed:
		return "🚫 The broker closed the channel" + withTask(t) + ": " + e.Note, red
	case lab.Refused:
		return fmt.Sprintf("↩️ Publish refused by the broker: %s -> %s", t, e.Queue) + withNote(e.Note), red
	case lab.Stranded:
		return fmt.Sprintf("🧊 Stranded in %s, where nothing consumes it: %s", where(e), t) + withNote(e.Note), red
	case lab.Mailed:
		if strings.Contains(e.Note, "\n") { // a whole mail: on lines of its own
			return "✉️ Mail sent to the customer of " + t + "\n" + e.Note, ""
		}
		return "✉️ Mail sent to the customer of " + t + withNote(e.Note), ""
	case lab.Phase:
		return "━━ " + e.Note + " ━━", bold
	case lab.Summary:
		return "", "" // summaries belong to the closing table
	}
	return fmt.Sprintf("❓ unknown event kind %q: %s", e.Kind, t) + withNote(e.Note), red
}

// where is the queue a stranded task sits in: To, or Queue if it never moved.
func where(e lab.Event) string {
	if e.To != "" {
		return e.To
	}
	return e.Queue
}

func via(queue string) string {
	if queue == "" {
		return ""
	}
	return " via " + queue
}

func withNote(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

func withTask(t string) string {
	if t == "" {
		return ""
	}
	return " (after task " + t + ")"
}

// delay formats a lesson-time delay the way a person says it: 1s, 2.5s, 300ms.
func delay(ms int64) string {
	if ms%1000 == 0 {
		return fmt.Sprintf("%ds", ms/1000)
	}
	if ms > 1000 {
		return fmt.Sprintf("%.1fs", float64(ms)/1000)
	}
	return fmt.Sprintf("%dms", ms)
}

// LogSink writes each event as a log line as it arrives, wrapped to
// Style.Width.
type LogSink struct {
	W     io.Writer
	Style Style
}

// Emit writes e's line, if it has one.
func (l LogSink) Emit(e lab.Event) {
	if line := l.Style.Line(e); line != "" {
		fmt.Fprintln(l.W, line)
	}
}

// placeWord names where in a queue a task landed (lab.Place).
func placeWord(p lab.Place) string {
	if p == lab.AtHead {
		return "head"
	}
	return "tail"
}
