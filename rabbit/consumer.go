package rabbit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
)

// ConsumerOptions configure a Consumer.
type ConsumerOptions struct {
	Queue    string      // seed name of the queue to consume
	Actor    string      // the worker's name in events, e.g. "Retry-Rabbit-Worker"
	Prefetch int         // unacknowledged deliveries the broker may hand out at once; 0 means 1
	Stream   *lab.Stream // where redelivered events go; nil reports none (benchmarks; Flow reports its own)
}

// DefaultGiveUpAfter is how long a session waits for a broker that went
// away: long enough for a node restart, short enough that a broker that
// stays down ends the run.
const DefaultGiveUpAfter = 30 * time.Second

// Delivery is one message handed to a Handler. The handler must Ack or
// Reject it; a delivery left unsettled when the connection drops is
// redelivered by the broker.
type Delivery struct {
	amqp.Delivery
	Task   string // the message id: the lab task
	Queue  string // seed name of the queue it was consumed from
	Deaths Deaths // its x-death history (broker queue names)
	names  Names
}

// Died is how many times the message died (expired or was rejected) in
// seed queue queue, read from x-death: in seed 000's loop,
// d.Died(EmailWait) counts the trips through the wait queue.
func (d *Delivery) Died(queue string) int64 { return d.Deaths.Count(d.names.Of(queue)) }

// Attempt is the processing attempt this delivery stands for: one more
// than the times it was rejected before. A redelivery repeats the attempt
// it interrupted. It is always in [1, MaxRetryCount+1]: a forged x-death
// cannot make it negative or huge (Deaths.Attempt says when it was capped).
func (d *Delivery) Attempt() int {
	n, _ := d.Deaths.Attempt()
	return n
}

// Ack acknowledges the delivery: the broker forgets the message.
func (d *Delivery) Ack() error { return d.Delivery.Ack(false) }

// Reject rejects the delivery without requeueing: the broker dead-letters
// it along its queue's x-dead-letter route (or drops it if there is none).
func (d *Delivery) Reject() error { return d.Nack(false, false) }

// Handler handles one delivery. The Consumer calls it from one goroutine,
// one delivery at a time.
type Handler func(ctx context.Context, d *Delivery)

// Consumer is a manual-ack consumer on a connection of its own. When that
// connection drops it logs the loss and reconnects; the broker then
// redelivers every unacknowledged message, which the Consumer reports as a
// redelivered event.
//
// It fails the session (Session.Err, which ends WaitSettled) instead of
// reconnecting when its queue is gone (404: deleted from outside the run),
// and when the broker stays away longer than Session.GiveUpAfter.
//
// A message whose AppId is not the run's (Names.Run) is foreign: the run
// did not publish it, so it is no task. The consumer never hands it to the
// handler and reports no event for it; it logs a warning, counts it
// (Guest.Foreign), moves it to the run's hold queue with a reason header
// and acks it (or, if that fails, rejects it without requeue). The hold
// queue outlives the run while it holds anything. A message with the run's
// AppId that is no well-formed task (TaskProblem) is held the same way,
// so no event ever carries an empty or made-up task id.
//
// Why a small loop and not amqp091-go's opt-in recovery (Config.Recovery,
// v1.12+): that recovery keeps the old delivery channel and re-consumes on
// a new AMQP channel whose delivery tags start again at 1, and it does not
// offset them. A handler that acks a delivery it received before the drop
// (the lessons' interrupted workers do exactly that) would then ack
// whichever new message carries the same tag: a silent loss. Here an ack
// from before the drop fails on the dead channel and the broker redelivers,
// and each step is visible to the lesson.
type Consumer struct {
	s      *Session
	opts   ConsumerOptions
	handle Handler

	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	conn       *amqp.Connection
	ch         *amqp.Channel // the channel it consumes on
	sock       net.Conn
	shutByKey  bool // the TUI's fault key closed the channel (holding)
	reconnects int
	planned    bool // the next connection loss is an Interrupt, not a fault
}

// Consume starts a consumer on seed queue opts.Queue whose deliveries go to
// handle. It connects before returning, so a missing queue is an error
// here, and so is a broker away for longer than Session.GiveUpAfter (the
// session reached it, so it is restarting or gone); later connection
// losses are recovered in the background until ctx ends or Stop is called.
func (s *Session) Consume(ctx context.Context, opts ConsumerOptions, handle Handler) (*Consumer, error) {
	if opts.Prefetch <= 0 {
		opts.Prefetch = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &Consumer{s: s, opts: opts, handle: handle, cancel: cancel, done: make(chan struct{})}
	var deliveries <-chan amqp.Delivery
	var closed chan *amqp.Error
	err := s.Retry(ctx, "consuming "+opts.Queue, func() (err error) {
		deliveries, closed, err = c.connect(ctx)
		return err
	})
	if err != nil {
		cancel()
		return nil, err
	}
	s.health.mu.Lock()
	s.health.consumers = append(s.health.consumers, c)
	s.health.mu.Unlock()
	go c.run(ctx, deliveries, closed)
	return c, nil
}

// connect dials, opens a channel with the prefetch and starts consuming.
func (c *Consumer) connect(ctx context.Context) (<-chan amqp.Delivery, chan *amqp.Error, error) {
	var sock net.Conn
	conn, err := dialAs(ctx, c.s.URL, ConnectionName(c.s.Names), func(network, addr string) (net.Conn, error) {
		conn, err := amqp.DefaultDial(probeTimeout)(network, addr)
		sock = conn
		return conn, err
	})
	if err != nil {
		return nil, nil, err
	}
	var ch *amqp.Channel
	deliveries, err := withinValue(ctx, func() (_ <-chan amqp.Delivery, err error) {
		ch, err = conn.Channel()
		if err != nil {
			return nil, err
		}
		if err := ch.Qos(c.opts.Prefetch, 0, false); err != nil {
			return nil, err
		}
		return ch.Consume(c.s.Names.Of(c.opts.Queue), c.opts.Actor, false, false, false, false, nil)
	})
	if err != nil {
		_ = closeWithin(conn)
		return nil, nil, fmt.Errorf("consuming %s: %w", c.s.Names.Of(c.opts.Queue), err)
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	c.mu.Lock()
	c.conn, c.sock, c.ch = conn, sock, ch
	c.mu.Unlock()
	c.channelEvent(true)
	return deliveries, closed, nil
}

// run serves deliveries and reconnects after a loss until ctx ends.
func (c *Consumer) run(ctx context.Context, deliveries <-chan amqp.Delivery, closed chan *amqp.Error) {
	defer close(c.done)
	for {
		c.serve(ctx, deliveries)
		c.channelEvent(false) // its deliveries closed, or the run is ending
		if ctx.Err() != nil {
			c.closeConn()
			return
		}
		var err error
		if deliveries, closed, err = c.recover(ctx, closed); err != nil {
			return
		}
	}
}

// recover logs the loss of the consumer's connection (lost says why) and
// reconnects; on failure it fails the session (unless ctx ended) and
// closes what is left. Until the new connection consumes, the run counts
// as moving (busyRetrying): its unacked message waits for this consumer,
// and on a loaded machine noticing the loss and redialling took longer
// than WaitSettled's patience (Q10 under a connection cut, both cores
// busy).
func (c *Consumer) recover(ctx context.Context, lost chan *amqp.Error) (<-chan amqp.Delivery, chan *amqp.Error, error) {
	c.s.health.busyRetrying(1)
	defer c.s.health.busyRetrying(-1)
	// A planned cut was announced once by InterruptConsumers: its loss
	// and reconnection are routine, so they log at debug level.
	level, what := slog.LevelWarn, "rabbit: consumer connection lost; reconnecting"
	if c.takePlanned() {
		level, what = slog.LevelDebug, "rabbit: consumer connection cut as planned; reconnecting"
	}
	reason := c.lossReason(lost)
	if c.takeShutByKey() {
		level, what = slog.LevelInfo, "rabbit: consumer channel closed with a delivery unacked; the broker requeues it; reconnecting"
		reason = "closed by the fault key"
	}
	c.s.Logger.Log(ctx, level, what, "actor", c.opts.Actor, "queue", c.opts.Queue, "err", reason)
	deliveries, closed, err := c.reconnect(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.s.health.fail(err)
		}
		c.closeConn()
		return nil, nil, err
	}
	c.s.Logger.Log(ctx, min(level, slog.LevelInfo), "rabbit: consumer reconnected", "actor", c.opts.Actor, "queue", c.opts.Queue)
	return deliveries, closed, nil
}

// serve hands deliveries to the handler until the delivery channel closes
// (the connection or channel went away) or ctx ends.
func (c *Consumer) serve(ctx context.Context, deliveries <-chan amqp.Delivery) {
	for {
		select {
		case <-ctx.Done():
			return
		case d, ok := <-deliveries:
			if !ok {
				return
			}
			if !c.s.guest.Screen(ctx, c.opts.Queue, d) {
				continue
			}
			dl := &Delivery{Delivery: d, Task: d.MessageId, Queue: c.opts.Queue, Deaths: ReadDeaths(d.Headers), names: c.s.Names}
			if d.Redelivered && c.opts.Stream != nil {
				c.opts.Stream.Emit(dl.redelivered(c.opts.Actor))
			}
			release := c.holding(ctx, dl)
			c.handle(ctx, dl)
			release()
		}
	}
}

// redelivered is the event for d handed out again, met by actor. It
// reopens d's task (lab.Ledger), so only a delivery the run will settle
// gets one: Flow leaves ConsumerOptions.Stream unset and reports it only
// for a task it still expects.
func (d *Delivery) redelivered(actor string) lab.Event {
	return lab.Event{Kind: lab.Redelivered, Task: d.Task, Queue: d.Queue, Actor: actor,
		Attempt: d.Attempt(), Note: "the broker handed it out again: it was never acknowledged"}
}

// lossReason says why the delivery channel closed. If the connection is
// still open, the broker closed only the channel or cancelled the consumer
// (e.g. its queue was deleted); that connection is closed before a new one
// is made, so none leaks.
func (c *Consumer) lossReason(closed chan *amqp.Error) string {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if !conn.IsClosed() {
		_ = closeWithin(conn)
		return "the broker closed the channel or cancelled the consumer"
	}
	return drain(closed).Error()
}

// reconnect redials as Session.Retry says until it succeeds, ctx ends,
// the queue turns out to be gone (a 404: deleted from outside the run),
// Session.GiveUpAfter has passed, or the session has failed.
func (c *Consumer) reconnect(ctx context.Context) (deliveries <-chan amqp.Delivery, closed chan *amqp.Error, err error) {
	err = c.s.Retry(ctx, c.opts.Actor+" reconnecting to "+c.opts.Queue, func() (err error) {
		deliveries, closed, err = c.connect(ctx)
		return err
	})
	switch {
	case isNotFound(err):
		return nil, nil, fmt.Errorf("queue %s was deleted while the run consumed it (not by this run)", c.s.Names.Of(c.opts.Queue))
	case err != nil:
		return nil, nil, err
	}
	c.mu.Lock()
	c.reconnects++
	c.mu.Unlock()
	return deliveries, closed, nil
}

// drain returns the close reason, if any was sent, without blocking for
// long: after a drop amqp091-go sends at most one error and closes the
// channel.
func drain(closed chan *amqp.Error) error {
	select {
	case err, ok := <-closed:
		if ok && err != nil {
			return err
		}
	case <-time.After(opTimeout):
	}
	return errors.New("connection closed")
}

// Reconnects is how many times the consumer has reconnected.
func (c *Consumer) Reconnects() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reconnects
}

// Interrupt cuts the consumer's TCP connection without an AMQP goodbye,
// as a network failure or a killed process would. Unacknowledged
// deliveries return to the queue; the consumer reconnects.
func (c *Consumer) Interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sock != nil {
		c.planned = true
		c.sock.Close()
	}
}

// holding offers the consumer's channel to the TUI's fault key
// (lab.Faults.CloseHolding) while the handler holds d unsettled; the
// returned release withdraws it. Closing the channel hands every
// unacknowledged delivery on it back to its queue: the broker redelivers
// d, and the consumer reconnects.
func (c *Consumer) holding(ctx context.Context, d *Delivery) (release func()) {
	f := lab.FaultsFrom(ctx)
	if f == nil {
		return func() {}
	}
	c.mu.Lock()
	ch := c.ch
	c.mu.Unlock()
	what := fmt.Sprintf("%s's channel on %s, holding task %s unacked", c.opts.Actor, c.opts.Queue, d.Task)
	return f.AddHolder(what, func() {
		c.mu.Lock()
		c.shutByKey = true
		c.mu.Unlock()
		_ = ch.Close()
	})
}

// takeShutByKey reports whether the fault key closed the channel, and
// clears the mark.
func (c *Consumer) takeShutByKey() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	by := c.shutByKey
	c.shutByKey = false
	return by
}

// takePlanned reports whether the last connection loss was an Interrupt,
// and clears the mark.
func (c *Consumer) takePlanned() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.planned
	c.planned = false
	return p
}

// Stop stops consuming and closes the consumer's connection; unacked
// deliveries go back to the queue. It waits for the handler to return.
func (c *Consumer) Stop() {
	c.cancel()
	<-c.done
}

// channelEvent tells Session.Channels, if set, that the consumer's channel
// opened or went away.
func (c *Consumer) channelEvent(opened bool) {
	if c.s.Channels != nil {
		c.s.Channels(opened)
	}
}

func (c *Consumer) closeConn() {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		_ = closeWithin(conn)
	}
}
