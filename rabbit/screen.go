package rabbit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// NotATask says why d is no task of the run, or returns "" when it is
// one: foreign (its AppId is not Names.Run: the run did not publish it) or
// malformed (TaskProblem). It is the one check every reader of the run's
// queues applies, the Consumer's and Peek's included.
func (g *Guest) NotATask(d amqp.Delivery) string {
	if d.AppId != g.s.Names.Run {
		return fmt.Sprintf("not published by run %s (app-id %q)", g.s.Names.Run, d.AppId)
	}
	if problem := TaskProblem(d); problem != "" {
		return "malformed: " + problem
	}
	return ""
}

// Screen reports whether delivery d, met on seed queue queue, is a task
// of the run a worker can handle. If it is not (NotATask, or one of the
// body checks also fails: a lesson's own decoder), Screen moves it to the
// run's hold queue with the reason and acks it, as a Consumer does, and
// returns false: the caller must not settle it, count it or report it. d
// must come from a channel that acknowledges by hand (basic.consume or
// basic.get without no-ack). It is for lessons that read a queue with
// amqp091-go's own calls rather than through a Consumer.
func (g *Guest) Screen(ctx context.Context, queue string, d amqp.Delivery, also ...func(body []byte) error) bool {
	reason := g.NotATask(d)
	for _, check := range also {
		if reason != "" {
			break
		}
		if err := check(d.Body); err != nil {
			reason = "malformed: " + err.Error()
		}
	}
	if reason == "" {
		if g.s.Observe != nil {
			g.s.Observe(queue, d)
		}
		return true
	}
	g.moveToHold(ctx, queue, d, reason)
	return false
}

// Sift reads every message ready in seed queue (at most peekScan) with
// basic.get and leaves the run's tasks where they are, in their order, as
// Peek does; unlike Peek, it holds each message that is no task of the
// run (Screen) instead of stepping over it. It returns the run's tasks it
// read, which must not be settled, and how many messages it held. A
// lesson that counts a queue's depth or reads it to the end sifts it
// first, so nobody else's message inflates what it shows.
//
// The run's messages it read go back when its channel closes, marked
// redelivered, as after any read that leaves messages in place.
func (g *Guest) Sift(ctx context.Context, queue string) ([]Delivery, int, error) {
	return g.scan(ctx, queue, peekScan, true, true)
}

// scan basic.gets up to max of the run's tasks from seed queue, reading
// at most peekScan messages, and hands them all back when it closes its
// channel. Each message that is no task is held (moveToHold) or stepped
// over and left in place. Holding runs outside the bound of one broker
// call: a 10 MB copy may take longer, and moveToHold bounds each of its
// own steps. With await it returns once what it handed back is in the
// queue again (handBack).
func (g *Guest) scan(ctx context.Context, queue string, max int, hold, await bool) ([]Delivery, int, error) {
	var ch *amqp.Channel
	err := g.s.Retry(ctx, "reading "+g.s.Names.Of(queue), func() (err error) {
		ch, err = withinValue(ctx, func() (*amqp.Channel, error) { return g.s.link.channel(ctx) })
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", g.s.Names.Of(queue), err)
	}
	var out []Delivery
	held, read := 0, 0
	defer func() { g.handBack(ctx, queue, ch, read-held, await) }()
	for len(out) < max && read < peekScan {
		d, ok, err := withinValueOK(ctx, func() (amqp.Delivery, bool, error) { return ch.Get(g.s.Names.Of(queue), false) })
		if err != nil {
			return out, held, fmt.Errorf("reading %s: %w", g.s.Names.Of(queue), err)
		}
		if !ok {
			break
		}
		read++
		if reason := g.NotATask(d); reason != "" {
			if hold {
				g.moveToHold(ctx, queue, d, reason)
				held++
			}
			continue
		}
		out = append(out, Delivery{Delivery: d, Task: d.MessageId, Queue: queue, Deaths: ReadDeaths(d.Headers), names: g.s.Names})
	}
	return out, held, nil
}

// handBack closes ch, which returns the kept messages it read from seed
// queue, and with await waits until the queue shows them again
// (awaitBack): a read straight after a Peek must find them all in place.
func (g *Guest) handBack(ctx context.Context, queue string, ch *amqp.Channel, kept int, await bool) {
	if kept <= 0 || !await {
		_ = ch.Close()
		return
	}
	left, err := g.s.Topo().Depth(ctx, queue) // what is ready besides them
	_ = ch.Close()
	if err == nil {
		awaitBack(ctx, left+kept, func(ctx context.Context) (int, error) { return g.s.Topo().Depth(ctx, queue) })
	}
}

// emptyWindow is how many deliveries Empty lets the broker push ahead of
// its acks.
const emptyWindow = 256

// Empty removes n messages from seed queue, which the run declared, and
// returns how many of them were the run's tasks whose id begins with ids
// ("" for any). It is a purge that counts: it consumes the queue, acks
// away each task of the run (one of another id too: a straggler of an
// earlier publish) and holds anything else (Screen), so a depth a lesson
// measures can leave out what someone else published there. It waits at
// most a few seconds for each message; deliveries past the n-th go back
// to the queue when its channel closes.
func (g *Guest) Empty(ctx context.Context, queue string, n int, ids string) (int, error) {
	name := g.s.Names.Of(queue)
	ch, deliveries, err := g.consumeAll(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("emptying %s: %w", name, err)
	}
	defer ch.Close()
	// The run's tasks are acked in batches (multiple: every outstanding
	// tag up to the last), half a window at a time: one ack a message
	// cost Q17 as long as publishing them. Whatever way Empty returns, it
	// acks what it took first, so a task it counts never goes back.
	var last amqp.Delivery
	taken, acked, counted := 0, 0, 0 // acked: the tasks whose ack went out
	ackTaken := func() error {
		if taken == acked {
			return nil
		}
		if err := last.Ack(true); err != nil {
			return fmt.Errorf("emptying %s: %w", name, err)
		}
		acked = taken
		return nil
	}
	for got := 0; got < n; got++ {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return counted, fmt.Errorf("emptying %s: the channel closed after %d of %d messages", name, got, n)
			}
			if !g.Screen(ctx, queue, d) {
				continue
			}
			last, taken = d, taken+1
			if strings.HasPrefix(d.MessageId, ids) {
				counted++
			}
			if taken-acked < emptyWindow/2 {
				continue
			}
			if err := ackTaken(); err != nil {
				return counted, err
			}
		case <-time.After(opTimeout):
			err := errors.Join(ackTaken(),
				fmt.Errorf("emptying %s: %d of %d messages came within %v", name, got, n, opTimeout))
			return counted, err
		case <-ctx.Done():
			err := errors.Join(ackTaken(), ctx.Err())
			return counted, err
		}
	}
	return counted, ackTaken()
}

// consumeAll opens a channel on the session's connection and consumes
// broker queue name on it with manual acks and emptyWindow's prefetch.
func (g *Guest) consumeAll(ctx context.Context, name string) (*amqp.Channel, <-chan amqp.Delivery, error) {
	type consuming struct {
		ch         *amqp.Channel
		deliveries <-chan amqp.Delivery
	}
	c, err := withinValue(ctx, func() (consuming, error) {
		ch, err := g.s.link.channel(ctx)
		if err != nil {
			return consuming{}, err
		}
		if err := ch.Qos(emptyWindow, 0, false); err != nil {
			ch.Close()
			return consuming{}, err
		}
		deliveries, err := ch.Consume(name, "", false /* autoAck */, false, false, false, nil)
		if err != nil {
			ch.Close()
			return consuming{}, err
		}
		return consuming{ch, deliveries}, nil
	})
	return c.ch, c.deliveries, err
}
