//go:build qlabex

package delayedretry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
)

// schedule is one run of the checker: the queue's delays and limit.
type schedule struct {
	min, max time.Duration
	limit    int
}

// schedules are two, so that neither a constant delay nor one without a
// maximum passes both: the first grows 300, 600, 900 ms under its
// maximum; the second reaches its maximum at the second failure.
var schedules = []schedule{
	{min: 300 * time.Millisecond, max: 1500 * time.Millisecond, limit: 3},
	{min: 200 * time.Millisecond, max: 400 * time.Millisecond, limit: 4},
}

// late is how much longer than its delay a return may take: the broker's
// timer and a busy machine (about 10 ms on an idle RabbitMQ 4.3.6, 55 ms
// with a load of 27), and short of what a maximum not kept adds by the
// second schedule's fourth failure (800 ms for 400 ms).
const late = 350 * time.Millisecond

// patience bounds each wait for a delivery beyond its delay, and the wait
// for the dead-lettered message.
const patience = 5 * time.Second

func TestDelayedRetry(t *testing.T) {
	c := check.New(t)
	url, ok := c.Broker43()
	if !ok {
		return
	}
	s, err := check.NewScratch(url)
	if err != nil {
		c.That(check.Run{Name: "this machine"}, "a RabbitMQ 4.3 broker to check against", false, err.Error(), "a connection", "")
		return
	}
	defer s.Close()
	for i, sc := range schedules {
		checkSchedule(c, s, i, sc)
	}
}

// delay is what the broker should hold failure n (1-based) for.
func (sc schedule) delay(n int) time.Duration { return min(time.Duration(n)*sc.min, sc.max) }

// checkSchedule declares a DLQ and the student's queue, sends one message
// round until the broker dead-letters it, and checks the counts, the
// waits and where it ended.
func checkSchedule(c *check.Checker, s *check.Scratch, i int, sc schedule) {
	queue, dlq := fmt.Sprintf("%sex21.work.%d", s.Prefix, i), fmt.Sprintf("%sex21.dlq.%d", s.Prefix, i)
	r := check.Run{Name: fmt.Sprintf("min %v, max %v, limit %d (queue %s)", sc.min, sc.max, sc.limit, queue)}
	err := s.Declare(dlq, nil)
	if err == nil {
		err = s.Declare(queue, QueueArgs(sc.min, sc.max, sc.limit, dlq))
	}
	if !c.That(r, "the broker accepts your arguments", err == nil, brokerWords(err), "the queue declared", "") {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	round, err := sendRound(ctx, s, queue, dlq, sc)
	// A busy machine only ever makes a return late, never early: a round
	// whose waits are only late goes again (twice at most), each failure
	// keeping its shortest wait. Load then fails no right schedule, and a
	// maximum not kept, late in every round, still fails.
	for again := 0; again < 2 && err == nil && round.timing(sc) == lateOnly; again++ {
		more, err := sendRound(ctx, s, queue, dlq, sc)
		if err != nil || len(more.waits) != len(round.waits) {
			break
		}
		for n, w := range more.waits {
			round.waits[n] = min(round.waits[n], w)
		}
	}
	r.Events = round.events
	want := []string{"-"}
	for n := 1; n <= sc.limit; n++ {
		want = append(want, fmt.Sprint(n))
	}
	got := strings.Join(round.counts, ", ")
	if err != nil {
		got += " (then: " + err.Error() + ")"
	}
	c.That(r, "x-delivery-count grows by one with each failure", got == strings.Join(want, ", "), got,
		strings.Join(want, ", "), "m")
	var gotWaits, wantWaits []string
	for _, w := range round.waits {
		gotWaits = append(gotWaits, fmt.Sprint(w.Round(10*time.Millisecond)))
	}
	for n := 1; n <= sc.limit; n++ {
		wantWaits = append(wantWaits, fmt.Sprint(sc.delay(n)))
	}
	c.That(r, "a failure waits min × x-delivery-count, never more than max, before it comes back", round.timing(sc) == onTime,
		strings.Join(gotWaits, ", "), strings.Join(wantWaits, ", ")+" (or up to "+late.String()+" more)", "m")
	c.That(r, fmt.Sprintf("failure %d is dead-lettered by the broker (x-death reason delivery_limit)", sc.limit+1),
		round.death == "delivery_limit", "x-death reason "+round.death, "x-death reason delivery_limit", "m")
}

// How a whole round's waits compare with the schedule's delays.
const (
	onTime   = "on time"   // each at least its delay, and less than late after it
	lateOnly = "late only" // none early, one or more late or later
	wrong    = "wrong"     // a failure missing, or a wait shorter than its delay
)

// timing says how rd's waits kept sc's delays. The broker's timers count
// whole milliseconds, so a wait a millisecond short is not early.
func (rd round) timing(sc schedule) string {
	if len(rd.waits) != sc.limit {
		return wrong
	}
	verdict := onTime
	for n, w := range rd.waits {
		d := sc.delay(n + 1)
		switch {
		case w < d-time.Millisecond:
			return wrong
		case w >= d+late:
			verdict = lateOnly
		}
	}
	return verdict
}

// round is what one message did.
type round struct {
	events []lab.Event
	counts []string        // x-delivery-count of each delivery ("-" when absent)
	waits  []time.Duration // from each Fail to the next delivery
	death  string          // the x-death reason it reached the DLQ with ("none": it did not)
}

// sendRound publishes one message to queue, hands each of its first
// limit+1 deliveries to Fail, and waits for it in dlq.
func sendRound(ctx context.Context, s *check.Scratch, queue, dlq string, sc schedule) (round, error) {
	rd := round{death: "none"}
	start := time.Now()
	ev := func(k lab.Kind, n int, note string) {
		rd.events = append(rd.events, lab.Event{Kind: k, Task: "m", Queue: queue, Actor: "Checker", Attempt: n,
			TMs: time.Since(start).Milliseconds(), Note: note})
	}
	ch, err := s.Conn.Channel()
	if err != nil {
		return rd, err
	}
	defer ch.Close()
	if err := ch.Qos(1, 0, false); err != nil { // prefetchCount, prefetchSize, global
		return rd, err
	}
	deliveries, err := ch.ConsumeWithContext(ctx, queue, "checker",
		false, // autoAck
		false, // exclusive
		false, // noLocal
		false, // noWait
		nil)
	if err != nil {
		return rd, err
	}
	ev(lab.Enqueued, 0, "")
	if err := s.Publish(ctx, queue, amqp.Publishing{MessageId: "m", Body: []byte("m")}); err != nil {
		return rd, err
	}
	var failed time.Time
	for n := 1; n <= sc.limit+1; n++ {
		d, err := next(deliveries, sc.max+patience)
		if err != nil {
			return rd, err
		}
		if n > 1 {
			rd.waits = append(rd.waits, time.Since(failed))
		}
		count := "-"
		if v, ok := d.Headers["x-delivery-count"]; ok {
			count = fmt.Sprint(v)
		}
		rd.counts = append(rd.counts, count)
		ev(lab.Started, n, "x-delivery-count "+count)
		failed = time.Now()
		if err := Fail(d); err != nil {
			return rd, fmt.Errorf("your Fail: %w", err)
		}
		ev(lab.Failed, n, "handed to your Fail")
	}
	rd.death, err = deadLettered(ctx, s.Conn, dlq)
	if rd.death != "none" {
		ev(lab.DeadLettered, sc.limit+1, "x-death reason "+rd.death)
		rd.events[len(rd.events)-1].To = dlq
	}
	return rd, err
}

// next waits up to d for the next delivery.
func next(deliveries <-chan amqp.Delivery, d time.Duration) (amqp.Delivery, error) {
	select {
	case m, ok := <-deliveries:
		if !ok {
			return m, errors.New("the consumer's channel closed")
		}
		return m, nil
	case <-time.After(d):
		return amqp.Delivery{}, fmt.Errorf("no delivery within %v", d)
	}
}

// deadLettered waits up to patience for the message in dlq and returns
// the reason of its latest x-death entry ("none" if it never came).
func deadLettered(ctx context.Context, conn *amqp.Connection, dlq string) (string, error) {
	ch, err := conn.Channel()
	if err != nil {
		return "none", err
	}
	defer ch.Close()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		d, ok, err := ch.Get(dlq, true) // autoAck: the checker's own queue
		if err != nil {
			return "none", err
		}
		if ok {
			if ds := rabbit.ReadDeaths(d.Headers); len(ds) > 0 {
				return ds[0].Reason, nil
			}
			return "none (no x-death)", nil
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return "none", ctx.Err()
		}
	}
	return "none", nil
}

// brokerWords is a declaration's outcome in the broker's words.
func brokerWords(err error) string {
	var amqpErr *amqp.Error
	switch {
	case err == nil:
		return "declared"
	case errors.As(err, &amqpErr):
		return fmt.Sprintf("refused: %d %s", amqpErr.Code, amqpErr.Reason)
	}
	return err.Error()
}
