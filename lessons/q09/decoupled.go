package q09

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/q07"
	"github.com/queuelab/qlab/render"
)

// The side-by-side the notice points to, with no flags: two poison tasks,
// C and E, so that E's last retry falls due while C's alert is being
// mailed. Once with the Second-Retry-Worker sending the alert itself, once
// with the DLQ-Worker; each on a stream of its own, its clock at
// q09MeasureSpeed (exact under go test).
var q09ComparePlan = lab.Plan{Tasks: []string{"A", "B", "C", "D", "E"}, Poison: []string{"C", "E"}, Work: 100 * time.Millisecond}

// q09MeasureSpeed keeps the side runs short live: 4 s of lesson time in
// about 0.2 s.
const q09MeasureSpeed = 20

// q09Design is who sends the alert for a task that failed all retries.
type q09Design struct {
	name   string
	inline bool // the Second-Retry-Worker mails, before it takes its next task
}

var q09Designs = []q09Design{
	{"the Second-Retry-Worker mails it itself", true},
	{"a DLQ-Worker mails it (this lesson)", false},
}

// q09Compare runs both designs on q09ComparePlan and tabulates how late
// E's last retry started and how long the Second-Retry-Worker spent on mail.
func q09Compare(ctx context.Context, env *lesson.Env) (render.Table, error) {
	t := render.Table{
		Title:  "Who sends the alert: the retry worker, or a DLQ-Worker of its own (measured)",
		Header: []string{"design", "E's last retry due", "started", "late", "Second-Retry-Worker mailing"},
		Notes: []string{
			"Tasks A–E, C and E poison: C reaches the DLQ at 3.5 s and E's last retry falls due at 3.6 s, while C's 500 ms alert is being sent.",
			fmt.Sprintf("Each design on a stream of its own, its clock at %d× (exact under go test). Mailing in the retry worker makes every retry behind it wait for the mail server.", q09MeasureSpeed),
		},
	}
	for _, d := range q09Designs {
		events, err := q09Side(ctx, env, d)
		if err != nil {
			return t, err
		}
		due, started, mailing := q09Figures(events)
		t.Rows = append(t.Rows, []string{d.name, render.Stamp(due), render.Stamp(started), fmt.Sprintf("%d ms", started-due), fmt.Sprintf("%d ms", mailing)})
	}
	return t, nil
}

// q09Side runs design d on a stream of its own and returns its events.
func q09Side(ctx context.Context, env *lesson.Env, d q09Design) ([]lab.Event, error) {
	var rec lab.Recorder
	side := &lesson.Env{Stream: lab.NewStream(env.Stream.Lesson(), lab.InMem, lab.NewClock(q09MeasureSpeed), &rec), Plan: q09ComparePlan, Options: lesson.Options{Consumers: 1}}
	chain := q07.NewChain(ctx, side)
	mailer := inmem.Mailer{Stream: side.Stream, Latency: MailLatency}
	dlq := chain.Sys.HoldingQueue("deadLetterQueue", chain.Room)
	if !d.inline {
		dlq = chain.Sys.Queue("deadLetterQueue", chain.Room)
		chain.Sys.Worker("DLQ-Worker", dlq, func(t *inmem.Task) {
			side.Stream.Emit(lab.Event{Kind: lab.Received, Task: t.ID, Queue: dlq.Name(), Actor: "DLQ-Worker"})
			mailer.Send(t.ID, inmem.DLQAlert(t.ID))
		})
	}
	err := chain.Run(ctx, side, func(actor string, from *inmem.Queue, t *inmem.Task) {
		from.DeadLetter(actor, t, dlq, "failed all retries")
		if d.inline {
			mailer.Actor = actor
			mailer.Send(t.ID, inmem.DLQAlert(t.ID)) // on the retry worker's own goroutine
		}
	})
	side.Stream.Finish()
	return rec.Events, err
}

// q09Figures reads E's last retry (due: its scheduling plus the wait;
// started) and the lesson time the Second-Retry-Worker spent sending mail.
func q09Figures(events []lab.Event) (due, started, mailing int64) {
	for _, e := range events {
		switch {
		case e.Task == "E" && e.Kind == lab.Scheduled && e.Attempt == 2:
			due = e.TMs + e.DelayMs
		case e.Task == "E" && e.Kind == lab.Started && e.Attempt == 3:
			started = e.TMs
		case e.Kind == lab.Alerted && e.Actor == "Second-Retry-Worker":
			mailing += MailLatency.Milliseconds()
		}
	}
	return due, started, mailing
}
