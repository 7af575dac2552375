package q21

import (
	"context"
	"fmt"
	"slices"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
)

// strategy is one source queue of part 4 and what became of its messages.
type strategy struct {
	name           string // at-most-once, at-least-once
	source, target string
	tasks          []string
	inTarget       []string // what the full target holds after the rejects
	held           int      // dead letters the source keeps (the management API's messages_dlx)
}

// deadLetterStrategy is part 4: three messages rejected from a quorum
// queue into a target that holds one (x-max-length 1, reject-publish).
// At-most-once, the default, publishes the dead letters without a confirm:
// the two the target refuses are gone. At-least-once (which needs
// x-overflow reject-publish on the source) keeps them in the source until
// the target takes them.
func (r *runner) deadLetterStrategy(ctx context.Context) error {
	r.env.Phase("Dead-lettering into a full target: at-most-once (the default) against " +
		"at-least-once (x-dead-letter-strategy, with x-overflow reject-publish)")
	c, ch, err := r.channel(ctx, 0, true)
	if err != nil {
		return err
	}
	defer c.Close()
	ss := []*strategy{
		{name: "at-most-once", source: mostSource, target: mostTarget, tasks: []string{"AM1", "AM2", "AM3"}},
		{name: "at-least-once", source: leastSource, target: leastTarget, tasks: []string{"AL1", "AL2", "AL3"}},
	}
	for _, s := range ss {
		if err := r.declareStrategy(ch, s); err != nil {
			return err
		}
	}
	for _, s := range ss {
		for _, task := range s.tasks {
			r.env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: task, Queue: s.source, Actor: Scheduler})
			if err := confirmed(ctx, ch, "", r.names.Of(s.source), task); err != nil {
				return err
			}
		}
		if err := r.rejectAll(ctx, ch, s); err != nil {
			return err
		}
	}
	time.Sleep(quiet) // the dead letters' way to the target
	for _, s := range ss {
		if s.held, err = r.awaitHeld(ctx, s); err != nil {
			return err
		}
		if err := r.drain(ctx, ch, s); err != nil {
			return err
		}
	}
	r.env.Report(strategyTable(ss))
	return nil
}

// declareStrategy declares s's full target and its quorum source.
func (r *runner) declareStrategy(ch *amqp.Channel, s *strategy) error {
	target := amqp.Table{"x-queue-type": "classic", "x-max-length": 1, "x-overflow": "reject-publish"}
	if err := r.queue(ch, s.target, target); err != nil {
		return err
	}
	source := amqp.Table{
		"x-queue-type":              "quorum",
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": r.names.Of(s.target),
	}
	if s.name == "at-least-once" {
		source["x-dead-letter-strategy"] = "at-least-once"
		source["x-overflow"] = "reject-publish" // without it the broker falls back to at-most-once
	}
	return r.queue(ch, s.source, source)
}

// rejectAll takes each of s's messages and rejects it without requeue: a
// permanent error, as the seed's worker rejects to its DLQ.
func (r *runner) rejectAll(ctx context.Context, ch *amqp.Channel, s *strategy) error {
	for range s.tasks {
		d, err := getOne(ctx, ch, r.names.Of(s.source))
		if err != nil {
			return err
		}
		task := string(d.Body)
		e := lab.Event{Task: task, Queue: s.source, Actor: "Worker", Attempt: 1}
		_ = r.env.Stream.Attempt(e, func() error { return fmt.Errorf("permanent error: reject, no requeue") })
		if err := d.Reject(false); err != nil { // requeue
			return err
		}
	}
	return nil
}

// drain takes what the full target holds (the dead letter it took):
// that task is dead-lettered. The others are kept by the source
// (at-least-once: stranded there until the broker retries) or gone.
func (r *runner) drain(ctx context.Context, ch *amqp.Channel, s *strategy) error {
	for {
		d, ok, err := ch.Get(r.names.Of(s.target), true) // autoAck
		if err != nil || !ok {
			break
		}
		task := string(d.Body)
		s.inTarget = append(s.inTarget, task)
		r.env.Stream.Emit(lab.Event{Kind: lab.DeadLettered, Task: task, Queue: s.source, To: s.target,
			Actor: "broker", Note: s.name + " dead-lettering; the target had room for this one"})
	}
	for _, task := range s.tasks {
		if slices.Contains(s.inTarget, task) {
			continue
		}
		if s.held > 0 {
			r.env.Stream.Emit(lab.Event{Kind: lab.Stranded, Task: task, Queue: s.source, Actor: "broker",
				Note: fmt.Sprintf("kept by the source (%d dead letters held) until a retry finds room "+
					"in the target; the run deletes the queue first", s.held)})
			continue
		}
		r.env.Stream.Emit(lab.Event{Kind: lab.Lost, Task: task, Queue: s.source, Actor: "broker",
			Note: s.name + ": the full target refused the dead letter, and nothing kept it"})
	}
	return nil
}

// heldWait bounds how long an at-least-once source is watched for the
// dead letters it keeps: a quorum queue's counts reach list_queues a
// moment after the rejects (read once 1.5 s after them, the kept two read
// 0 in 2 test runs of 5 at load 33 on 2 cores).
const heldWait = 15 * time.Second

// awaitHeld is heldDeadLetters, watched for up to heldWait while it reads
// 0 at an at-least-once source (which keeps what its full target
// refuses); an at-most-once source keeps nothing, so one read is its
// answer.
func (r *runner) awaitHeld(ctx context.Context, s *strategy) (int, error) {
	held := 0
	_, err := rabbit.PollUntil(ctx, 250*time.Millisecond, heldWait, func() (bool, error) {
		var err error
		held, err = r.heldDeadLetters(ctx, s)
		return held > 0 || s.name != "at-least-once", err
	})
	return held, err
}

// heldDeadLetters is how many dead letters s's source keeps for a retry:
// the messages it holds that are neither ready nor unacked (rabbitmqctl
// list_queues, asked of a running node).
func (r *runner) heldDeadLetters(ctx context.Context, s *strategy) (int, error) {
	qs, err := r.c.Queues(ctx)
	if err != nil {
		return 0, err
	}
	for _, q := range qs {
		if q.Name == r.names.Of(s.source) {
			return q.Messages - q.Ready - q.Unacked, nil
		}
	}
	return 0, fmt.Errorf("no queue %s on the cluster", r.names.Of(s.source))
}

// getOne takes one message from queue (basic.get), waiting for it.
func getOne(ctx context.Context, ch *amqp.Channel, queue string) (amqp.Delivery, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		d, ok, err := ch.Get(queue, false) // autoAck
		if err != nil || ok {
			return d, err
		}
		select {
		case <-ctx.Done():
			return d, fmt.Errorf("no message in %s: %w", queue, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
