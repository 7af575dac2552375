//go:build qlabex

package waitqueues

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
)

// The waits the checker configures: two, so a TTL written as a constant
// cannot pass both.
var ttls = []time.Duration{300 * time.Millisecond, 800 * time.Millisecond}

// patience bounds each wait for a delivery beyond the TTL: a message that
// is not back by then was dropped, not delayed.
const patience = 5 * time.Second

func TestWaitQueues(t *testing.T) {
	c := check.New(t)
	url, ok := c.Broker()
	if !ok {
		return
	}
	conn, err := amqp.Dial(url)
	if err != nil {
		c.That(check.Run{Name: "this machine"}, "a RabbitMQ broker to check against", false, err.Error(), "a connection", "")
		return
	}
	defer conn.Close()
	var created []string
	defer func() { deleteQueues(conn, created) }() // before the connection closes
	for _, ttl := range ttls {
		roundTrip(c, conn, ttl, &created)
	}
}

// expires deletes a queue of the checker's that nobody used for a minute,
// should a killed check leave it behind.
const expires = int64(60_000)

// roundTrip declares a work and a wait queue with the student's arguments
// under a private prefix, checks the arguments by re-declaring them as
// they should be, and sends one message round: rejected from the work
// queue, it must come back after the wait, with x-death saying how.
func roundTrip(c *check.Checker, conn *amqp.Connection, ttl time.Duration, created *[]string) {
	prefix := rabbit.RunNames().Prefix
	work, wait := prefix+"ex.work", prefix+"ex.wait"
	r := check.Run{Name: fmt.Sprintf("a wait of %v (queues %s, %s)", ttl, work, wait)}
	declared := declare(conn, created, map[string]amqp.Table{work: WorkQueueArgs(wait), wait: WaitQueueArgs(ttl, work)})
	ok := c.That(r, "the broker accepts your arguments", declared == nil, fmt.Sprint(declared), "both queues declared", "")
	if !ok {
		return
	}
	route := func(to string) amqp.Table {
		return amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": to, "x-expires": expires}
	}
	want := route(work)
	want["x-message-ttl"] = ttl.Milliseconds()
	workOK := c.That(r, "the work queue dead-letters a rejected message to the wait queue",
		redeclare(conn, work, route(wait)) == nil, reason(redeclare(conn, work, route(wait))),
		fmt.Sprintf("x-dead-letter-exchange \"\", x-dead-letter-routing-key %s", wait), "")
	waitOK := c.That(r, "the wait queue holds a message for the TTL, then sends it back",
		redeclare(conn, wait, want) == nil, reason(redeclare(conn, wait, want)),
		fmt.Sprintf("x-message-ttl %d, x-dead-letter-exchange \"\", x-dead-letter-routing-key %s", ttl.Milliseconds(), work), "")
	if !workOK || !waitOK {
		return // the message would be dropped or kept: no need to wait for it
	}
	events, err := send(conn, work, ttl)
	r.Events = events
	back := r.Of("m", lab.Started)
	got := "the message never came back: " + fmt.Sprint(err)
	if len(back) == 2 {
		got = fmt.Sprintf("back after %d ms", back[1].TMs-back[0].TMs)
	}
	c.That(r, "a rejected message comes back to the work queue after the wait",
		len(back) == 2 && back[1].TMs-back[0].TMs >= ttl.Milliseconds(), got,
		fmt.Sprintf("back after %d ms or a little more", ttl.Milliseconds()), "m")
	if len(back) == 2 {
		c.Expect(r, "x-death says how: rejected once in the work queue, expired once in the wait queue",
			back[1].Note, fmt.Sprintf("x-death: %s rejected ×1, %s expired ×1", work, wait), "m")
	}
}

// inequivalent reads the broker's 406 on a re-declare: "inequivalent arg
// 'x-message-ttl' for queue 'q' in vhost '/': received '300' but current
// is '500'" (or "… is none" for an argument the queue lacks).
var inequivalent = regexp.MustCompile(`inequivalent arg '([^']+)' .* but current is (.*)$`)

// reason says what a refused re-declare found on the student's queue, in
// the broker's words when it can, or "as wanted".
func reason(err error) string {
	var amqpErr *amqp.Error
	switch {
	case err == nil:
		return "as wanted"
	case !errors.As(err, &amqpErr):
		return err.Error()
	}
	m := inequivalent.FindStringSubmatch(amqpErr.Reason)
	switch {
	case m == nil:
		return amqpErr.Reason
	case m[2] == "none":
		return m[1] + " is missing on your queue"
	}
	return fmt.Sprintf("%s is %s on your queue", m[1], m[2])
}

// declare declares each queue with the student's arguments plus
// x-expires, and adds it to created (a fresh prefix: only the checker's).
func declare(conn *amqp.Connection, created *[]string, queues map[string]amqp.Table) error {
	for name, args := range queues {
		ch, err := conn.Channel()
		if err != nil {
			return err
		}
		with := amqp.Table{"x-expires": expires}
		for k, v := range args {
			with[k] = v
		}
		_, err = ch.QueueDeclare(name, false, false, false, false, with)
		_ = ch.Close()
		if err != nil {
			return fmt.Errorf("declaring %s: %w", name, err)
		}
		*created = append(*created, name)
	}
	return nil
}

// deleteQueues deletes the queues the checker created.
func deleteQueues(conn *amqp.Connection, names []string) {
	for _, name := range names {
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(name, false, false, false)
			_ = ch.Close()
		}
	}
}

// redeclare declares queue name again with args: the broker accepts it
// only when they are equivalent to what the queue was declared with.
func redeclare(conn *amqp.Connection, name string, args amqp.Table) error {
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	_, err = ch.QueueDeclare(name, false, false, false, false, args)
	return err
}

// send publishes one message to work, rejects its first delivery and
// waits for the second, returning the events: enqueued, started, failed
// (the reject), started again with the x-death it carries as the note.
func send(conn *amqp.Connection, work string, ttl time.Duration) ([]lab.Event, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	deliveries, err := ch.Consume(work, "", false, true, false, false, nil)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	at := func() int64 { return time.Since(start).Milliseconds() }
	ev := func(k lab.Kind, n int, note string) lab.Event {
		return lab.Event{Kind: k, Task: "m", Queue: work, Actor: "Checker", Attempt: n, TMs: at(), Note: note}
	}
	events := []lab.Event{ev(lab.Enqueued, 0, "")}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ch.PublishWithContext(ctx, "", work, false, false, amqp.Publishing{Body: []byte("m")}); err != nil {
		return events, err
	}
	first, err := next(deliveries, patience)
	if err != nil {
		return events, err
	}
	events = append(events, ev(lab.Started, 1, ""))
	if err := first.Reject(false); err != nil {
		return events, err
	}
	events = append(events, ev(lab.Failed, 1, "rejected, requeue false: the work queue's dead-letter route takes it"))
	second, err := next(deliveries, ttl+patience)
	if err != nil {
		return events, err
	}
	events = append(events, ev(lab.Started, 2, "x-death: "+deathsText(second.Headers)))
	return events, second.Ack(false)
}

// next waits up to d for the next delivery.
func next(deliveries <-chan amqp.Delivery, d time.Duration) (amqp.Delivery, error) {
	select {
	case m, ok := <-deliveries:
		if !ok {
			return m, fmt.Errorf("the consumer's channel closed")
		}
		return m, nil
	case <-time.After(d):
		return amqp.Delivery{}, fmt.Errorf("no delivery within %v", d)
	}
}

// deathsText is a message's x-death history, oldest first.
func deathsText(h amqp.Table) string {
	ds := rabbit.ReadDeaths(h)
	s := ""
	for i := len(ds) - 1; i >= 0; i-- {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s %s ×%d", ds[i].Queue, ds[i].Reason, ds[i].Count)
	}
	if s == "" {
		return "none"
	}
	return s
}
