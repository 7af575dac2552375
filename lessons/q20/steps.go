package q20

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/store"
)

// step is how far the crashing worker takes one message before it dies:
// each of the five it holds (prefetch 5) is caught at another point.
type step int

// The points the crash catches a message at, in the order a worker passes
// them: claim (SENDING), send, mark SENT; the ack would come next.
const (
	held    step = iota // in the worker's hands, not yet claimed: the row is QUEUED
	claimed             // claimed (SENDING), the crash comes before the send
	sent                // sent, the crash comes before the row is marked SENT
	marked              // sent and marked SENT, the crash comes before the ack
)

// script is the step each message of a part is taken to, by its number
// (R1 … R5): every window, so one crash shows them all. None is acked: a
// message the worker acked is the broker's no more, and nothing to show.
var script = []step{marked, marked, sent, claimed, held}

// String says what the step means at the moment of the crash.
func (s step) String() string {
	return [...]string{"held, not claimed (QUEUED)", "claimed SENDING, not sent",
		"sent, still SENDING", "sent and SENT, not acked"}[s]
}

// sendTime is how long the mail API takes to send one message (lesson time).
const sendTime = 500 * time.Millisecond

// progress is what a worker reports as it goes: the event (one of the
// step words below) and the message it is about.
type progress func(what, id string)

// The words a worker reports progress with: the crashing process writes
// them on its stdout, one a line, and the lesson reads them back.
const (
	sayClaimed = "claimed"
	saySent    = "sent"
	sayMarked  = "marked"
	sayHolding = "holding" // every message taken to its step: kill me now
)

// work takes message id to step to against db, reporting each step done;
// wait is the clock the send takes its time on.
// It returns once the message reached its step, never acking it.
func work(ctx context.Context, db store.Statuses, id string, to step,
	wait func(context.Context, time.Duration) error, say progress) error {
	if to < claimed {
		return nil
	}
	won, err := db.Claim(ctx, id)
	if err != nil {
		return err
	}
	if !won {
		return fmt.Errorf("%s: claim lost on a fresh row", id)
	}
	say(sayClaimed, id)
	if to < sent {
		return nil
	}
	if err := wait(ctx, sendTime); err != nil {
		return err
	}
	say(saySent, id)
	if to < marked {
		return nil
	}
	if err := db.MarkSent(ctx, id); err != nil {
		return err
	}
	say(sayMarked, id)
	return nil
}
