// Package q16 is lesson Q16 — operating the DLQ of seed 002's
// notification service: what x-max-length does when email-queue is full,
// how to read email-dlq without emptying it, and how to replay it.
//
// Notice: with the default overflow (drop-head) every publish is
// confirmed while the OLDEST jobs are dead-lettered to email-dlq (x-death
// reason maxlen); with reject-publish the newest are nacked and kept
// nowhere; reject-publish-dlx nacks them AND dead-letters them. The seed's
// management-API inspection (ackmode ack_requeue_false) removes what it
// shows; basic.get without an ack, then closing the channel (what its
// ack_requeue_true does), does not.
// A replayed job whose body still says retries 4 goes straight back to
// the DLQ on its next failure; reset the counter when you replay.
//
// Why so long: three overflow modes, the seed's inspection against one that
// keeps the messages, and a replay with and without resetting the counter
// (replay.go): each is a separate broker run the lesson reads back.
package q16

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	_ "github.com/queuelab/qlab/lesson/rabbitenv" // the broker mechanism env.Open uses
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/notify"
)

var Lesson = lesson.Lesson{
	ID:    "Q16",
	Title: "Operating the DLQ: overflow, inspect without loss, replay",
	Notice: fmt.Sprintf("email-queue holds x-max-length %d and %d jobs are published: drop-head (the default) "+
		"confirms every publish and dead-letters the OLDEST to email-dlq (reason maxlen), "+
		"reject-publish nacks the newest and keeps them nowhere, reject-publish-dlx nacks and "+
		"dead-letters them. The seed's inspection (ackmode ack_requeue_false) is basic.get with "+
		"no-ack: it deletes what it shows. C, parked with retries %d in its body, comes straight "+
		"back on its next failure unless the replay resets the counter.",
		q16MaxLength, q16Published, notify.MaxRetries-1),
	Rabbit:     runQ16,
	Default:    lab.Rabbit,
	TestSpeed:  100, // the one retry's 30 s wait takes 300 ms
	Topologies: notify.Topologies,
	Faults:     true, // in the fault suite (lessons/faults)
	// The seed's DLQ inspection (ack_requeue_false: basic.get with no-ack)
	// removes what it shows: the two jobs it reads are gone.
	LosesOnPurpose: []string{"d01", "d02"},
}

// The lesson's scale: the seed's 100000 scaled down to q16MaxLength, and
// two jobs more than fit.
const (
	q16MaxLength = 10
	q16Published = q16MaxLength + 2
)

// RejectPublishDLX is the third x-overflow RabbitMQ knows: refuse the new
// message (a nack to a confirming publisher) and dead-letter it as well.
const RejectPublishDLX flow.Overflow = "reject-publish-dlx"

// q16Overflow is one overflow run: the mode and its tasks' prefix.
type q16Overflow struct {
	mode   flow.Overflow
	prefix string
}

var q16Overflows = []q16Overflow{{flow.DropHead, "d"}, {flow.RejectPublish, "r"}, {RejectPublishDLX, "x"}}

func (o q16Overflow) name() string {
	if o.mode == flow.DropHead {
		return "drop-head (default)"
	}
	return string(o.mode)
}

// q16Topology is seed 002's topology with email-queue scaled down to
// q16MaxLength (0: the seed's 100000) and overflowing as mode says.
func q16Topology(maxLength int, mode flow.Overflow) flow.Topology {
	t := notify.Topology(maxLength)
	t.Queues = append([]flow.Queue(nil), t.Queues...)
	for i := range t.Queues {
		if t.Queues[i].Name == notify.EmailQueue {
			t.Queues[i].Overflow = mode
		}
	}
	return t
}

// runQ16 runs the three overflow modes, then the DLQ operations.
func runQ16(ctx context.Context, env *lesson.Env) error {
	overflow := render.Table{
		Title:  fmt.Sprintf("What x-overflow did with %d jobs published to email-queue (x-max-length %d)", q16Published, q16MaxLength),
		Header: []string{"x-overflow", "publisher confirms", "dead-lettered to email-dlq", "left in email-queue"},
		Notes: []string{"RabbitMQ's docs (Queue Length Limit): the default drops or dead-letters from the head; reject-publish and reject-publish-dlx refuse the newest, " +
			"and only reject-publish-dlx also dead-letters what it refuses. Only ready messages count toward the limit, not unacknowledged ones.",
			"d01 and d02 do not stay in email-dlq: the seed's inspection (next table) removes them, so their summary says lost."},
	}
	inspect := q16InspectTable()
	version := ""
	for _, o := range q16Overflows {
		env.Phase("x-overflow " + o.name() + fmt.Sprintf(": %d jobs into x-max-length %d", q16Published, q16MaxLength))
		row, v, err := q16OverflowRun(ctx, env, o, &inspect)
		if err != nil {
			return err
		}
		overflow.Rows, version = append(overflow.Rows, row), v
	}
	overflow.Title += " (RabbitMQ " + version + ")"
	env.Report(overflow)
	replay, err := q16Operate(ctx, env, &inspect)
	env.Report(inspect)
	if replay.Title != "" {
		env.Report(replay)
	}
	return err
}

// q16OverflowRun publishes q16Published jobs to a full-size-q16MaxLength
// email-queue overflowing as o says, reads back where each went, and lets
// a worker send what email-queue kept. On the drop-head run it also reads
// email-dlq the way the seed's management-API command does.
func q16OverflowRun(ctx context.Context, env *lesson.Env, o q16Overflow, inspect *render.Table) ([]string, string, error) {
	b, err := env.Open(ctx)
	if err != nil {
		return nil, "", err
	}
	defer env.Close(ctx, b)
	if err := env.Declare(ctx, b, q16Topology(q16MaxLength, o.mode)); err != nil {
		return nil, "", err
	}
	s, err := rabbit.SessionOf(b)
	if err != nil {
		return nil, "", err
	}
	pub, err := s.Publisher(ctx)
	if err != nil {
		return nil, "", err
	}
	defer pub.Close()
	acked, nacked := 0, 0
	for i := 1; i <= q16Published; i++ {
		task := fmt.Sprintf("%s%02d", o.prefix, i)
		// The event follows the confirm: enqueued only once the broker took it.
		err := pub.Publish(ctx, notify.EmailQueue, task, notify.NewJob(task, time.Now()).Encode())
		switch {
		case errors.Is(err, rabbit.ErrNacked):
			nacked++
			env.Stream.Emit(lab.Event{Kind: lab.Refused, Task: task, Queue: notify.EmailQueue, Actor: "API", Note: q16Refusal(o.mode)})
		case err != nil: // no confirm either way: the broker may or may not hold it
			env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: task, Queue: notify.EmailQueue, Actor: "API", Note: "not confirmed"})
			env.Stream.Emit(lab.Event{Kind: lab.Lost, Task: task, Queue: notify.EmailQueue, Actor: "API", Note: "publish failed before its confirm: " + err.Error()})
			return nil, "", err
		default:
			acked++
			env.Stream.Emit(lab.Event{Kind: lab.Enqueued, Task: task, Queue: notify.EmailQueue, Actor: "API", Note: "confirmed"})
		}
	}
	kept, parked, err := s.Guest().Sift(ctx, notify.EmailQueue)
	if err != nil {
		return nil, "", err
	}
	want := acked - len(kept) // confirmed, yet not in email-queue: dropped from the head
	if o.mode == RejectPublishDLX {
		want += nacked
	}
	dead, foreign, err := q16Landed(ctx, s, want)
	if err != nil {
		return nil, "", err
	}
	var deadIDs []string
	for _, d := range dead {
		deadIDs = append(deadIDs, fmt.Sprintf("%s (%s)", d.Task, q16Reasons(d.Deaths)))
		env.Stream.Emit(lab.Event{Kind: lab.DeadLettered, Task: d.Task, Queue: notify.EmailQueue, To: notify.DLQ, Actor: "Broker",
			Note: "x-death reason " + q16Reasons(d.Deaths) + ": email-queue was full"})
	}
	deadCell := q16List(deadIDs)
	if parked += foreign; parked > 0 {
		deadCell += fmt.Sprintf("; and %d the run did not publish, parked in the hold queue", parked)
	}
	sent, err := q16Send(ctx, env, s)
	if err != nil {
		return nil, "", err
	}
	if o.mode == flow.DropHead {
		if err := q16TakeLikeTheSeed(ctx, env, s, inspect); err != nil {
			return nil, "", err
		}
	}
	return []string{o.name(), fmt.Sprintf("%d ack, %d nack", acked, nacked), deadCell, q16Range(sent)}, flow.FactsOf(b).Version, nil
}

// q16Refusal is what a nacked publish means under overflow mode.
func q16Refusal(mode flow.Overflow) string {
	n := "email-queue is full (" + string(mode) + "): the broker nacked the publish"
	if mode == RejectPublishDLX {
		return n + " and dead-letters the message to email-dlq"
	}
	return n + " and keeps no copy; only the API knows, and must retry or report it"
}

// q16Send is a worker that takes every job email-queue holds and sends it
// (the mail service is up in this part); it returns their ids in order.
// A message that is no job of the run is parked, not sent.
func q16Send(ctx context.Context, env *lesson.Env, s *rabbit.Session) ([]string, error) {
	r := s.Reader()
	defer r.Close()
	var ids []string
	for {
		d, ok, err := r.Get(ctx, notify.EmailQueue)
		if err != nil || !ok {
			return ids, err
		}
		if !s.Guest().Screen(ctx, notify.EmailQueue, d, isJob) {
			continue
		}
		ids = append(ids, d.MessageId)
		at := lab.Event{Task: d.MessageId, Queue: notify.EmailQueue, Actor: "Email-Worker", Attempt: 1}
		_ = env.Stream.Attempt(at, func() error { return nil })
		if err := d.Ack(false); err != nil && (!rabbit.Transient(err) || s.Err() != nil) {
			return ids, err
		} // a lost channel: the broker hands the job out again, and it is sent twice (at least once)
	}
}

// isJob is Screen's check that a body is an email job.
func isJob(body []byte) error {
	_, err := notify.DecodeJob(body)
	return err
}

// q16Landed sifts email-dlq (rabbit.Sift: the run's messages left in
// place, anyone else's parked in the hold queue) until it holds want of
// the run's messages, or q16Landing has passed, and returns those and how
// many it parked. Dead-lettering is asynchronous: the broker has
// confirmed a publish, or taken a nack, before the message that overflow
// or nack dead-letters reaches email-dlq.
func q16Landed(ctx context.Context, s *rabbit.Session, want int) ([]rabbit.Delivery, int, error) {
	var dead []rabbit.Delivery
	parked := 0
	_, err := rabbit.PollUntil(ctx, 20*time.Millisecond, q16Landing, func() (bool, error) {
		var n int
		var err error
		dead, n, err = s.Guest().Sift(ctx, notify.DLQ)
		parked += n
		return len(dead) >= want, err
	})
	return dead, parked, err
}

// q16Landing bounds the wait for dead-lettered messages to reach
// email-dlq: it takes milliseconds, so only a broken route waits this
// long.
const q16Landing = 30 * time.Second

// q16TakeLikeTheSeed reads email-dlq as the seed's command does:
// POST /api/queues/%2F/email-dlq/get with ackmode ack_requeue_false, which
// the management plugin carries out as basic.get with no-ack (rabbit.Take).
// The management plugin is not enabled on the lab's broker, so the lab
// sends the same AMQP method itself. What it shows is gone, so email-dlq
// is sifted first: a message someone else put there is parked, not
// deleted by the lesson.
func q16TakeLikeTheSeed(ctx context.Context, env *lesson.Env, s *rabbit.Session, inspect *render.Table) error {
	dlq := s.Names.Of(notify.DLQ)
	if _, _, err := s.Guest().Sift(ctx, notify.DLQ); err != nil { // what is not the run's is parked, not deleted
		return err
	}
	var before, after int
	var shown []amqp.Delivery
	err := s.OnConnection(ctx, "reading email-dlq as the seed does", func(conn *amqp.Connection) (err error) {
		if before, err = rabbit.QueueDepth(ctx, conn, dlq); err != nil {
			return err
		}
		if len(shown) < 10 { // the seed's "count":10, over a retry too
			got, err := rabbit.Take(ctx, conn, dlq, 10-len(shown))
			shown = append(shown, got...) // taken with no-ack: gone even if the connection is lost next
			if err != nil {
				return err
			}
		}
		after, err = rabbit.QueueDepth(ctx, conn, dlq)
		return err
	})
	if err != nil {
		return err
	}
	for _, d := range shown {
		if reason := s.Guest().NotATask(d); reason != "" { // published between the sift and the read
			s.Logger.Warn("q16: the seed's read removed a message the run did not publish", "message_id", d.MessageId, "reason", reason)
			continue
		}
		env.Stream.Emit(lab.Event{Kind: lab.Lost, Task: d.MessageId, Queue: notify.DLQ, Actor: "Operator",
			Note: "read with the seed's ackmode ack_requeue_false (basic.get, no-ack): shown once and removed from email-dlq; no copy is kept"})
	}
	inspect.Rows = append(inspect.Rows, []string{"the seed's curl …/get with ackmode ack_requeue_false = basic.get no-ack",
		fmt.Sprintf("%d → %d", before, after), fmt.Sprintf("%d shown, all removed", len(shown)), "-"})
	return nil
}

// q16Reasons lists the distinct x-death reasons of a history.
func q16Reasons(ds rabbit.Deaths) string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Reason)
	}
	if len(out) == 0 {
		return "no x-death"
	}
	return strings.Join(out, ", ")
}

func q16List(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// q16Range shows a run of ids as "first … last (n)".
func q16Range(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return fmt.Sprintf("%s … %s (%d)", ids[0], ids[len(ids)-1], len(ids))
}
