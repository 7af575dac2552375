package q16

import (
	"cmp"
	"context"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/notify"
)

// q16Worker is the seed's processMessage on one delivery: send the mail;
// on failure retries++, and at MAX_RETRIES nack the original (email-queue
// dead-letters it through email-dlx to email-dlq), otherwise publish a
// copy with the new count and its delay to email-retry-queue and ack.
type q16Worker struct {
	env      *lesson.Env
	s        *rabbit.Session
	pub      *rabbit.Publisher
	attempts map[string]int
	fails    func(task string, attempt int) error // the mail service's answer
	inDLQ    int                                  // jobs nacked to email-dlq and not replayed since
}

// handle processes d and reports it. A redelivery (the broker handed d
// out again: its channel was lost before the worker settled it) repeats
// the attempt it interrupted.
func (w *q16Worker) handle(ctx context.Context, d amqp.Delivery) error {
	job, err := notify.DecodeJob(d.Body)
	if err != nil {
		return fmt.Errorf("q16: %s: %w", d.MessageId, err)
	}
	task := d.MessageId
	if !d.Redelivered || w.attempts[task] == 0 {
		w.attempts[task]++
	}
	at := lab.Event{Task: task, Queue: notify.EmailQueue, Actor: "Email-Worker", Attempt: w.attempts[task]}
	if d.Redelivered {
		e := at
		e.Kind, e.Note = lab.Redelivered, "the broker handed it out again: it was never acknowledged"
		w.env.Stream.Emit(e)
	}
	if w.env.Stream.Attempt(at, func() error { return w.fails(task, w.attempts[task]) }) == nil {
		return d.Ack(false)
	}
	read := job.Retries
	job.Retries++
	if job.Retries >= notify.MaxRetries {
		e := at
		e.Kind, e.To, e.Actor = lab.DeadLettered, notify.DLQ, "Email-Worker"
		e.Note = fmt.Sprintf("retries %d → %d ≥ MAX_RETRIES: nack(msg, false, false) → email-dlx → email-dlq; the body it parks still says retries %d", read, job.Retries, read)
		w.env.Stream.Emit(e)
		if err := d.Nack(false, false /* requeue */); err != nil {
			return err
		}
		w.inDLQ++
		return nil
	}
	wait := notify.RetryDelay(job.Retries)
	msg := rabbit.Publishing(task, job.Encode())
	msg.Expiration = rabbit.Expiration(w.s.Clock, wait)
	if err := w.pub.PublishMessage(ctx, notify.RetryQueue, msg); err != nil {
		return err
	}
	e := at
	e.Kind, e.Via, e.To, e.DelayMs = lab.Scheduled, notify.RetryQueue, notify.EmailQueue, wait.Milliseconds()
	e.Note = fmt.Sprintf("retries %d → %d: a copy waits getRetryDelay(%d) in email-retry-queue; the original is acked", read, job.Retries, job.Retries)
	w.env.Stream.Emit(e)
	return d.Ack(false)
}

// serve handles every job email-queue gets until email-queue is empty and
// no job it handled waits for a retry, within the longest retry delay,
// the session's give-up and a few seconds. A message that is no job of
// the run is held. It reads on a rabbit.Reader, whose channel outlives a
// lost connection or a restart; a settle that fails with the channel is
// left to the broker, which hands the message out again.
func (w *q16Worker) serve(ctx context.Context) error {
	// A broker that goes away is waited for by Retry, up to the give-up:
	// a restart under load (stop_app, start_app) must not end the loop
	// first, as it did in CI with "broker did not answer" after 16 s.
	away := cmp.Or(w.s.GiveUpAfter, rabbit.DefaultGiveUpAfter)
	ctx, cancel := context.WithTimeout(ctx, w.s.Clock.Real(notify.RetryDelays[len(notify.RetryDelays)-1])+away+10*time.Second)
	defer cancel()
	r := w.s.Reader()
	defer r.Close()
	for {
		d, ok, err := r.Get(ctx, notify.EmailQueue)
		if err != nil {
			return err
		}
		if ok {
			if !w.s.Guest().Screen(ctx, notify.EmailQueue, d, isJob) {
				continue // moved to the run's hold queue: someone else's, or no email job
			}
			if err := w.handle(ctx, d); err != nil && !w.lostChannel(err) {
				return err
			}
			continue
		}
		if !w.waiting() {
			return nil
		}
		if err := w.s.Clock.Wait(ctx, time.Second); err != nil { // a retry is due later: look again
			return fmt.Errorf("q16: waiting for email-retry-queue: %w", err)
		}
	}
}

// lostChannel reports whether err is a settle that failed because the
// broker went away while the run can go on: the message comes back.
func (w *q16Worker) lostChannel(err error) bool {
	if !rabbit.Transient(err) || w.s.Err() != nil {
		return false
	}
	w.s.Warn("q16: a settle failed with its channel; the broker hands the job out again", "err", err.Error())
	return true
}

// waiting reports whether a job the worker handled is still on its way
// (pending in the stream's ledger: a copy in email-retry-queue, or a
// replayed job): the worker's own record, not email-retry-queue's depth,
// which counts anyone's messages and drops to 0 while an expired copy is
// still being dead-lettered back to email-queue.
func (w *q16Worker) waiting() bool {
	for _, r := range w.env.Stream.Tasks() {
		if _, handled := w.attempts[r.ID]; handled && r.Fate == lab.FatePending {
			return true
		}
	}
	return false
}

// q16Operate parks the plan's jobs that fail on their last try, inspects
// email-dlq without loss, and replays it twice: as it is, then with the
// retry counter reset. The mail service is fixed before the replays, but
// the first send of each replayed job still fails (a cold SMTP pool).
func q16Operate(ctx context.Context, env *lesson.Env, inspect *render.Table) (render.Table, error) {
	env.Phase(fmt.Sprintf("Operating email-dlq: jobs on their last try (retries %d of MAX_RETRIES %d), inspected, replayed", notify.MaxRetries-1, notify.MaxRetries))
	b, err := env.Open(ctx)
	if err != nil {
		return render.Table{}, err
	}
	defer env.Close(ctx, b)
	if err := env.Declare(ctx, b, q16Topology(0, flow.DropHead)); err != nil {
		return render.Table{}, err
	}
	s, err := rabbit.SessionOf(b)
	if err != nil {
		return render.Table{}, err
	}
	pub, err := s.Publisher(ctx)
	if err != nil {
		return render.Table{}, err
	}
	defer pub.Close()
	cold, fixed := map[string]bool{}, false
	w := &q16Worker{env: env, s: s, pub: pub, attempts: map[string]int{}, fails: func(task string, attempt int) error {
		if cold[task] {
			delete(cold, task)
			return fmt.Errorf("SMTP connection reset (the first send after the fix)")
		}
		if !fixed {
			return env.Plan.Fails(task, attempt)
		}
		return nil
	}}
	for _, task := range env.Plan.Tasks {
		job := notify.NewJob(task, time.Now())
		job.Retries = notify.MaxRetries - 1 // its last try: Q14 shows the waits before it
		env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: task, Queue: notify.EmailQueue, Actor: "API", Note: fmt.Sprintf("retries %d in the body", job.Retries)})
		if err := pub.Publish(ctx, notify.EmailQueue, task, job.Encode()); err != nil {
			return render.Table{}, err
		}
	}
	if err := w.serve(ctx); err != nil {
		return render.Table{}, err
	}
	fixed = true
	if _, _, err := q16Landed(ctx, s, w.inDLQ); err != nil {
		return render.Table{}, err
	}
	if err := q16InspectSafely(ctx, s, inspect); err != nil {
		return render.Table{}, err
	}
	replay := render.Table{
		Title:  "Replaying email-dlq to email-queue after the fix (RabbitMQ " + flow.FactsOf(b).Version + ")",
		Header: []string{"replay", "task", "body on replay", "first send", "then"},
		Notes: []string{"Each replay: basic.get, a confirmed publish of the copy to email-queue, then the ack of the original (rabbit.Replay, as qlab dlq replay does). " +
			"Killed between the confirm and the ack, the job is in both queues: a duplicate, never a loss.",
			"The body a nack parks is the one the worker received: the worker's retries++ was never written back, so it says one less than the count that sent it there."},
	}
	for _, reset := range []bool{false, true} {
		rows, err := q16Replay(ctx, env, w, cold, reset)
		if err != nil {
			return replay, err
		}
		replay.Rows = append(replay.Rows, rows...)
	}
	return replay, nil
}

// q16Replay replays all of email-dlq (resetting the counter or not), lets
// the worker handle what comes back, and reports each replayed job.
func q16Replay(ctx context.Context, env *lesson.Env, w *q16Worker, cold map[string]bool, reset bool) ([][]string, error) {
	s := w.s
	how := "as it is"
	if reset {
		how = "--reset-retries"
	}
	if _, _, err := q16Landed(ctx, s, w.inDLQ); err != nil { // the last nack's job is there, and nobody else's
		return nil, err
	}
	// The sift just read email-dlq and handed its messages back by closing
	// its channel; the queue may take them back a moment after the close:
	// a replay that finds fewer than landed replays again, within the
	// landing bound.
	var moved []amqp.Delivery
	_, err := rabbit.PollUntil(ctx, 20*time.Millisecond, q16Landing, func() (bool, error) {
		err := s.OnConnection(ctx, "replaying email-dlq", func(conn *amqp.Connection) error {
			res, err := rabbit.Replay(ctx, conn, s.Names.Of(notify.DLQ), s.Names.Of(notify.EmailQueue), rabbit.ReplayOptions{ResetRetries: reset})
			moved = append(moved, res.Moved...) // a replay cut short moved these; the next one moves the rest
			return err
		})
		return len(moved) >= w.inDLQ, err
	})
	w.inDLQ -= len(moved)
	for _, d := range moved {
		cold[d.MessageId] = true
		env.Stream.Emit(lab.Event{Kind: lab.Moved, Task: d.MessageId, Queue: notify.DLQ, To: notify.EmailQueue, Actor: "Operator",
			Note: "replayed " + how + ": confirmed copy to email-queue, then the original acked"})
	}
	if err != nil {
		return nil, err
	}
	if err := w.serve(ctx); err != nil {
		return nil, err
	}
	var rows [][]string
	for _, d := range moved {
		body := "retries ?"
		if job, err := notify.DecodeJob(d.Body); err == nil {
			body = fmt.Sprintf("retries %d", job.Retries)
			if reset {
				body += " → 0"
			}
		}
		rows = append(rows, []string{how, d.MessageId, body, "failed", q16Fate(env, d.MessageId)})
	}
	return rows, nil
}

// q16Fate says where task is now, from the stream's ledger.
func q16Fate(env *lesson.Env, task string) string {
	for _, r := range env.Stream.Tasks() {
		if r.ID == task {
			switch r.Fate {
			case lab.FateDead:
				return "straight back to email-dlq"
			case lab.FateDone:
				return "one retry through email-retry-queue, then sent"
			}
			return string(r.Fate)
		}
	}
	return "?"
}

// q16InspectTable is the table of the ways to read email-dlq.
func q16InspectTable() render.Table {
	return render.Table{
		Title:  "Reading email-dlq: what each way leaves behind",
		Header: []string{"how", "depth before → after", "what it read", "order afterwards"},
		Notes: []string{
			"RabbitMQ's management HTTP API docs: ackmode ack_requeue_false or reject_requeue_false removes the messages, ack_requeue_true or reject_requeue_true requeues them. " +
				"The plugin's source (rabbit_mgmt_wm_queue_get) does it so: ack_requeue_false is basic.get with no_ack=true; ack_requeue_true is basic.get without an ack, " +
				"and the channel it closes after the reply requeues them (no reject is sent); only the reject_ modes send basic.reject per message, " +
				"and reject_requeue_false dead-letters them if the queue has a dead-letter exchange. " +
				"The management plugin is not enabled on this broker, so the lab sends the same AMQP methods itself.",
			"Leaving a message in place costs something: the broker marks it redelivered, and a requeue may reorder a queue that others are consuming at the same time. qlab dlq inspect uses the channel-close way.",
		},
	}
}

// q16InspectSafely reads email-dlq twice without removing anything: with
// basic.get and no ack, then closing the channel (rabbit.Inspect, qlab dlq
// inspect, and what the management API's ack_requeue_true does), and as
// its reject_requeue_true does (rabbit.InspectRequeue); depth and order
// are checked after each. Each way is read again whole if the broker drops
// the connection meanwhile.
func q16InspectSafely(ctx context.Context, s *rabbit.Session, t *render.Table) error {
	dlq := s.Names.Of(notify.DLQ)
	ways := []struct {
		how  string
		read func(context.Context, *amqp.Connection, string, int) ([]amqp.Delivery, error)
	}{
		{"basic.get, no ack, close the channel (ackmode ack_requeue_true; qlab dlq inspect)", rabbit.Inspect},
		{"basic.get each, then basic.reject each with requeue (ackmode reject_requeue_true)", rabbit.InspectRequeue},
	}
	for _, way := range ways {
		var before int
		var read, again []amqp.Delivery
		err := s.OnConnection(ctx, "inspecting email-dlq", func(conn *amqp.Connection) (err error) {
			if before, err = rabbit.QueueDepth(ctx, conn, dlq); err != nil {
				return err
			}
			if read, err = way.read(ctx, conn, dlq, 0); err != nil {
				return err
			}
			again, err = rabbit.Inspect(ctx, conn, dlq, 0)
			return err
		})
		if err != nil {
			return err
		}
		order := "same"
		for i := range read {
			if i >= len(again) || again[i].MessageId != read[i].MessageId {
				order = "changed"
			}
		}
		redelivered := 0
		for _, d := range again {
			if d.Redelivered {
				redelivered++
			}
		}
		t.Rows = append(t.Rows, []string{way.how, fmt.Sprintf("%d → %d", before, len(again)),
			fmt.Sprintf("%s: %s", q16Ids(read), q16Bodies(read)), fmt.Sprintf("%s; %d of %d marked redelivered", order, redelivered, len(again))})
	}
	return nil
}

func q16Ids(ds []amqp.Delivery) string {
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.MessageId)
	}
	return q16List(ids)
}

// q16Bodies shows the retries count and x-death of each message read.
func q16Bodies(ds []amqp.Delivery) string {
	var out []string
	for _, d := range ds {
		job, err := notify.DecodeJob(d.Body)
		r := "?"
		if err == nil {
			r = fmt.Sprint(job.Retries)
		}
		out = append(out, fmt.Sprintf("retries %s, x-death %s", r, q16Reasons(rabbit.ReadDeaths(d.Headers))))
	}
	return q16List(out)
}
