//go:build qlabex

package dlqreplay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/notify"
)

// parked are the emails the checker's dead-letter queue holds, in order,
// each after the document's five attempts.
var parked = []string{"d1", "d2", "d3", "d4", "d5"}

func TestDLQReplay(t *testing.T) {
	c := check.New(t)
	url, ok := c.Broker()
	if !ok {
		return
	}
	parts := []func(c *check.Checker, s *check.Scratch, dlq, work string){
		func(c *check.Checker, s *check.Scratch, dlq, _ string) { peek(c, s, dlq, 3) },
		func(c *check.Checker, s *check.Scratch, dlq, _ string) { peek(c, s, dlq, 10) },
		replay,
	}
	for _, part := range parts { // each on queues of its own, full again
		if !onFreshDLQ(c, url, part) {
			return
		}
	}
}

// onFreshDLQ runs part on a dead-letter queue of its own, filled with
// the parked emails, and deletes its queues after. It reports whether the
// broker let it set up.
func onFreshDLQ(c *check.Checker, url string, part func(c *check.Checker, s *check.Scratch, dlq, work string)) bool {
	s, err := check.NewScratch(url)
	if err != nil {
		return c.That(check.Run{Name: "this machine"}, "a RabbitMQ broker to check against", false, err.Error(), "a connection", "")
	}
	defer s.Close()
	dlq, work := s.Prefix+notify.DLQ, s.Prefix+notify.EmailQueue
	if err := fill(s, dlq, work); err != nil {
		return c.That(check.Run{Name: "this machine"}, "the checker's dead-letter queue fills", false, err.Error(), "5 dead-lettered emails", "")
	}
	part(c, s, dlq, work)
	return true
}

// fill declares email-dlq, email-queue and a source queue whose messages
// expire at once into email-dlq (so each carries a real x-death), and
// puts the parked emails there.
func fill(s *check.Scratch, dlq, work string) error {
	src := s.Prefix + "parking"
	for name, args := range map[string]amqp.Table{dlq: nil, work: nil,
		src: {"x-message-ttl": int64(0), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}} {
		if err := s.Declare(name, args); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range parked {
		job := notify.NewJob(id, time.UnixMilli(1707217200000))
		job.Retries = notify.MaxRetries
		msg := amqp.Publishing{MessageId: id, ContentType: "application/json", Headers: amqp.Table{"x-origin": "checker"}, Body: job.Encode()}
		if err := s.Publish(ctx, src, msg); err != nil {
			return err
		}
	}
	for ctx.Err() == nil {
		if n, err := rabbit.QueueDepth(ctx, s.Conn, dlq); err != nil || n == len(parked) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ctx.Err()
}

// peek calls Peek for n messages and checks what it returned and what
// the DLQ holds afterwards, read before the student's channel closes (a
// close would hand back whatever Peek kept).
func peek(c *check.Checker, s *check.Scratch, dlq string, n int) {
	r := check.Run{Name: fmt.Sprintf("Peek(ch, email-dlq, %d) on 5 parked emails", n)}
	ch, err := newRecorder(s.Conn)
	if err != nil {
		c.That(r, "a RabbitMQ broker to check against", false, err.Error(), "a channel", "")
		return
	}
	defer ch.close()
	jobs, err := Peek(ch, dlq, n)
	var got []string
	for _, j := range jobs {
		got = append(got, j.Data.NotificationID)
	}
	want := parked[:min(n, len(parked))]
	c.That(r, "peek shows the first n messages, in order, each once", err == nil && slices.Equal(got, want),
		fmt.Sprintf("%v (error %v; you did: %s)", got, err, ch.did()), fmt.Sprint(want), "")
	left, err := ch.drain(dlq)
	c.That(r, "reading leaves the DLQ as it was: every message, in order", err == nil && slices.Equal(left, parked),
		fmt.Sprintf("email-dlq holds %v after Peek (you did: %s)", left, ch.did()), fmt.Sprintf("email-dlq holds %v", parked), "")
}

// replay calls Replay and checks what reached email-queue, what is left
// in email-dlq, and the order of each copy's confirm and its ack.
func replay(c *check.Checker, s *check.Scratch, dlq, work string) {
	r := check.Run{Name: "Replay(ctx, ch, email-dlq, email-queue, publish) on 5 parked emails"}
	ch, err := newRecorder(s.Conn)
	if err != nil {
		c.That(r, "a RabbitMQ broker to check against", false, err.Error(), "a channel", "")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	publish := func(ctx context.Context, queue string, msg amqp.Publishing) error {
		err := s.Publish(ctx, queue, msg)
		ch.step("publish " + msg.MessageId + map[bool]string{true: " (confirmed)", false: " (failed)"}[err == nil])
		return err
	}
	n, err := Replay(ctx, ch, dlq, work, publish)
	ch.close() // whatever Replay left unsettled goes back to email-dlq
	c.That(r, "Replay moves every message and says how many", err == nil && n == len(parked),
		fmt.Sprintf("Replay returned %d, error %v", n, err), fmt.Sprintf("Replay returned %d, error <nil>", len(parked)), "")
	moved, errWork := read(s, work)
	left, errDLQ := ids(s, dlq)
	var movedIDs []string
	for _, m := range moved {
		movedIDs = append(movedIDs, m.MessageId)
	}
	c.That(r, "every message is replayed once, in order, and email-dlq is empty afterwards",
		errWork == nil && errDLQ == nil && slices.Equal(movedIDs, parked) && len(left) == 0,
		fmt.Sprintf("email-queue holds %v, email-dlq %v", movedIDs, left), fmt.Sprintf("email-queue holds %v, email-dlq []", parked), "")
	for _, m := range moved {
		job, err := notify.DecodeJob(m.Body)
		got := fmt.Sprintf("%s: retries %d, headers %v", m.MessageId, job.Retries, headerNames(m.Headers))
		if err != nil {
			got = fmt.Sprintf("%s: no email job (%v)", m.MessageId, err)
		}
		c.That(r, "a replayed email starts over: retries 0, no x-death or other header", err == nil && job.Retries == 0 && len(m.Headers) == 0,
			got, m.MessageId+": retries 0, headers []", m.MessageId)
	}
	c.That(r, "each copy is confirmed before its original is acked", ch.confirmedFirst(),
		"you did: "+ch.did(), "for each email: get (not autoAck), publish (confirmed), then ack", "")
}

func headerNames(h amqp.Table) []string {
	var out []string
	for k := range h {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// read returns what queue holds, in order, leaving it there.
func read(s *check.Scratch, queue string) ([]amqp.Delivery, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return rabbit.Inspect(ctx, s.Conn, queue, 0)
}

// ids returns the message ids queue holds, in order, leaving them there.
func ids(s *check.Scratch, queue string) ([]string, error) {
	ds, err := read(s, queue)
	var out []string
	for _, d := range ds {
		out = append(out, d.MessageId)
	}
	return out, err
}

// recorder is a real channel that records each call the student makes,
// and each settle of a delivery it handed out, in order.
type recorder struct {
	ch    *amqp.Channel
	mu    sync.Mutex
	steps []string
	tags  map[uint64]string // delivery tag → message id
}

func newRecorder(conn *amqp.Connection) (*recorder, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	return &recorder{ch: ch, tags: map[uint64]string{}}, nil
}

func (r *recorder) close() { _ = r.ch.Close() }

func (r *recorder) step(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, s)
}

// did is every step, in order.
func (r *recorder) did() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.steps) == 0 {
		return "nothing"
	}
	return strings.Join(r.steps, ", ")
}

// settled names the deliveries tag covers (every one up to it when
// multiple).
func (r *recorder) settled(tag uint64, multiple bool) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !multiple {
		return r.tags[tag]
	}
	var out []string
	for t := uint64(1); t <= tag; t++ {
		if id, ok := r.tags[t]; ok {
			out = append(out, id)
		}
	}
	return strings.Join(out, "+")
}

func (r *recorder) Get(queue string, autoAck bool) (amqp.Delivery, bool, error) {
	d, ok, err := r.ch.Get(queue, autoAck)
	if err != nil || !ok {
		r.step("get: " + map[bool]string{true: "error", false: "empty"}[err != nil])
		return d, ok, err
	}
	r.mu.Lock()
	r.tags[d.DeliveryTag] = d.MessageId
	r.mu.Unlock()
	if autoAck {
		r.step("get " + d.MessageId + " with autoAck (taken)")
	} else {
		r.step("get " + d.MessageId)
	}
	d.Acknowledger = r
	return d, ok, err
}

func (r *recorder) Ack(tag uint64, multiple bool) error {
	r.step("ack " + r.settled(tag, multiple))
	return r.ch.Ack(tag, multiple)
}

func (r *recorder) Nack(tag uint64, multiple, requeue bool) error {
	r.step(fmt.Sprintf("nack %s requeue=%v", r.settled(tag, multiple), requeue))
	return r.ch.Nack(tag, multiple, requeue)
}

func (r *recorder) Reject(tag uint64, requeue bool) error {
	r.step(fmt.Sprintf("reject %s requeue=%v", r.settled(tag, false), requeue))
	return r.ch.Reject(tag, requeue)
}

// drain takes every message queue holds, in order, on the student's own
// channel, unrecorded, and returns their ids. A nack is not answered: the
// queue applies it when it gets to it, and a read on another channel
// (even a message count) can overtake it, so the messages Peek handed
// back may not be there yet. A get on the same channel reaches the queue
// after every settle sent before it. Taking them is harmless: each part
// has a DLQ of its own. max bounds a queue that keeps filling.
func (r *recorder) drain(queue string) ([]string, error) {
	const max = 100
	var out []string
	for len(out) < max {
		d, ok, err := r.ch.Get(queue, true)
		if err != nil || !ok {
			return out, err
		}
		out = append(out, d.MessageId)
	}
	return out, nil
}

// confirmedFirst reports whether every email was got without autoAck and
// its copy confirmed before its ack.
func (r *recorder) confirmedFirst() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	confirmed := map[string]bool{}
	for _, s := range r.steps {
		switch {
		case strings.HasSuffix(s, "(taken)"):
			return false
		case strings.HasPrefix(s, "publish ") && strings.HasSuffix(s, "(confirmed)"):
			confirmed[strings.Fields(s)[1]] = true
		case strings.HasPrefix(s, "ack "):
			for _, id := range strings.Split(strings.TrimPrefix(s, "ack "), "+") {
				if !confirmed[id] {
					return false
				}
			}
		}
	}
	return len(confirmed) > 0
}
