package rabbit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
)

// ReasonHeader is the header a message parked by a worker carries: why it
// was parked (the broker's own dead-lettering writes x-death instead).
const ReasonHeader = "qlab-reason"

// Flow is the RabbitMQ mechanism of the flow seam. The broker holds every
// message: a retry is a reject that the queue's dead-letter route takes
// into a TTL wait queue (or, for a consumer that counts attempts in a
// header, a confirmed republish to the wait queue, then an ack); a park is
// a reject along the route, or a confirmed publish to the DLQ, then an
// ack. Messages outlive an Interrupt, which only cuts the consumers'
// connections.
type Flow struct {
	s      *Session
	stream *lab.Stream
	pub    *Publisher
	work   inflight

	// routeMu keeps PublishTo's publishes one at a time.
	routeMu sync.Mutex

	mu        sync.Mutex
	topo      flow.Topology
	exchanges []string // broker names of the exchanges the flow declared
	consumed  map[string]bool
	err       error
	stops     []context.CancelFunc // end the batch consumers' gatherers

	batches sync.WaitGroup // the batch consumers' gatherers
}

// NewFlow runs a flow on session s, reporting to stream. It opens the
// confirm channel producers and republishing workers share.
func NewFlow(ctx context.Context, s *Session, stream *lab.Stream) (*Flow, error) {
	pub, err := s.Publisher(ctx)
	if err != nil {
		return nil, err
	}
	return &Flow{s: s, stream: stream, pub: pub, consumed: map[string]bool{}}, nil
}

// Kind is lab.Rabbit.
func (f *Flow) Kind() lab.Backend { return lab.Rabbit }

// Features: the broker keeps messages through a crash of the workers, and
// a waiting message sits in a queue anyone can count; delays are real time.
func (f *Flow) Features() flow.Features { return flow.Features{SurvivesCrash: true, WaitDepth: true} }

// Session returns the session the flow runs on.
func (f *Flow) Session() *Session { return f.s }

// BrokerVersion is the version the broker reported when the session
// connected (flow.BrokerInfo).
func (f *Flow) BrokerVersion() string {
	v, _ := f.s.Connection().Properties["version"].(string)
	return v
}

// SessionOf is the RabbitMQ session under backend b, for a broker-only
// lesson that goes past the seam (a basic.get of its own, a probe);
// ErrNotOnBroker when b runs elsewhere. It asks for the capability, not
// the type: any backend with a Session qualifies.
func SessionOf(b flow.Backend) (*Session, error) {
	sb, ok := b.(interface{ Session() *Session })
	if !ok {
		return nil, fmt.Errorf("%w: the lesson runs on %s", ErrNotOnBroker, b.Kind())
	}
	return sb.Session(), nil
}

// ErrNotOnBroker means a broker-only step ran on a backend with no broker
// session.
var ErrNotOnBroker = errors.New("rabbit: this needs a RabbitMQ session")

// Declare declares t on the broker under the session's names: its queues
// (Topo.Declare), then its exchanges and bindings. Close deletes them.
func (f *Flow) Declare(ctx context.Context, t flow.Topology) error {
	if err := f.s.topo.Declare(ctx, t); err != nil {
		return err
	}
	exchanges, err := f.s.topo.declareRoutes(ctx, t)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topo, f.exchanges = t, append(f.exchanges, exchanges...)
	return err
}

// Consume starts a manual-ack consumer on c.Queue, with c's prefetch
// (basic.qos), whose deliveries c.Handle decides one at a time.
func (f *Flow) Consume(ctx context.Context, c flow.Consumer) error {
	return f.consume(ctx, c, c.Window(1), func(ctx context.Context, d *Delivery, fd *flow.Delivery) {
		f.apply(ctx, c, d, fd, c.Handle(ctx, fd))
	})
}

// ConsumeBatch starts a manual-ack consumer on c.Queue with a prefetch of
// at least b.Size, and hands b.Handle up to b.Size deliveries, or those
// that came within b.Wait (lesson time) of the first; each decision
// settles its own delivery (an ack, a reject, a republish). The batch
// waits in this process: a lost connection hands its messages out again.
func (f *Flow) ConsumeBatch(ctx context.Context, c flow.Consumer, b flow.Batch) error {
	if err := b.Check(); err != nil {
		return err
	}
	type held struct {
		d  *Delivery
		fd *flow.Delivery
	}
	window := b.Window(c)
	in := make(chan held, window)
	gctx, stop := context.WithCancel(ctx)
	err := f.consume(gctx, c, window, func(ctx context.Context, d *Delivery, fd *flow.Delivery) {
		select {
		case in <- held{d, fd}:
		case <-ctx.Done():
		}
	})
	if err != nil {
		stop()
		return err
	}
	f.mu.Lock()
	f.stops = append(f.stops, stop)
	f.mu.Unlock()
	f.batches.Add(1)
	go func() {
		defer f.batches.Done()
		flow.Gather(gctx, in, b.Size, f.s.Clock.Real(b.Wait), func(hs []held) {
			ds := make([]*flow.Delivery, len(hs))
			for i, h := range hs {
				ds[i] = h.fd
			}
			for i, dec := range b.Decide(gctx, ds) {
				f.apply(gctx, c, hs[i].d, hs[i].fd, dec)
			}
		})
	}()
	return nil
}

// consume starts a consumer on c.Queue with prefetch window that hands
// each delivery whose attempt it can read to deliver.
func (f *Flow) consume(ctx context.Context, c flow.Consumer, window int, deliver func(context.Context, *Delivery, *flow.Delivery)) error {
	f.mu.Lock()
	f.consumed[c.Queue] = true
	f.mu.Unlock()
	// No Stream in the options: a redelivery is reported here, once it is
	// known to be a task the run still expects. A copy of one it settled
	// (its ack lost with a connection) must not reopen the task's fate.
	opts := ConsumerOptions{Queue: c.Queue, Actor: c.Actor, Prefetch: window}
	_, err := f.s.Consume(ctx, opts, func(ctx context.Context, d *Delivery) {
		if !f.s.guest.Sealed(d.Delivery) {
			f.s.guest.Hold(ctx, d, fmt.Sprintf("forged: task %q carries the run's app-id but not its seal (%s): "+
				"the run did not publish it", d.Task, SealHeader))
			return
		}
		if d.Redelivered && f.work.reclaim(d.Task, d.Queue) {
			f.s.Logger.Info("rabbit: a reject was lost with its connection; the broker handed the message out again where it was",
				"task", d.Task, "queue", d.Queue, "run", f.s.Names.Run)
		}
		if !f.work.has(d.Task, d.Queue) {
			f.notOurs(ctx, d)
			return
		}
		f.work.arrived(d.Task, d.Queue)
		if d.Redelivered {
			f.stream.Emit(d.redelivered(c.Actor))
		}
		attempt, err := attemptOf(d, c.RetryHeader)
		if err != nil {
			f.holdUncounted(ctx, d, err)
			return
		}
		deliver(ctx, d, &flow.Delivery{Task: d.Task, Queue: d.Queue, Attempt: attempt,
			Redelivered: d.Redelivered, Body: d.Body, Headers: headersOf(d)})
	})
	if err != nil {
		f.mu.Lock()
		delete(f.consumed, c.Queue)
		f.mu.Unlock()
	}
	return err
}

// notOurs takes a delivery the run does not expect out of its way: a task
// id the run never published to this queue or has already settled there.
// One the broker hands out again (its ack was lost with a connection) is
// a copy of a message the run settled: it is acked, and the task's fate
// stands. Any other (a copy with the run's app-id from outside, say) is
// held with the reason: it is no task of the run, and handling it could
// change a finished task's fate.
func (f *Flow) notOurs(ctx context.Context, d *Delivery) {
	if d.Redelivered {
		f.s.Logger.Info("rabbit: the broker handed out again a message the run already settled; acked",
			"task", d.Task, "queue", d.Queue, "run", f.s.Names.Run)
		_ = d.Ack()
		return
	}
	f.s.guest.Hold(ctx, d, fmt.Sprintf("task %q is not waiting in %s: the run never published it there, or has settled it already", d.Task, d.Queue))
}

// headersOf is d's headers, never nil: a broker message always has a
// (maybe empty) header table. A handler that needs to know it runs on a
// broker asks the backend (flow.BrokerInfo), not the table.
func headersOf(d *Delivery) amqp.Table {
	if d.Headers == nil {
		return amqp.Table{}
	}
	return d.Headers
}

// attemptOf is the attempt delivery d stands for: 1 + the rejects x-death
// counted, or 1 + the consumer's own retry header. Both come from outside
// the process, so both are validated (ParseDeaths, ReadRetries): an error
// means the message cannot say which attempt it is.
func attemptOf(d *Delivery, header string) (int, error) {
	if header == "" {
		deaths, err := ParseDeaths(d.Headers)
		if err != nil {
			return 0, err
		}
		return deaths.Attempt()
	}
	n, err := ReadRetries(d.Headers, header)
	return 1 + n, err
}

// Publish publishes task to queue and waits for the broker's confirm.
func (f *Flow) Publish(ctx context.Context, actor, queue, task string) error {
	at := f.expect(task, queue)
	f.stream.Emit(lab.Event{Kind: lab.Enqueued, Task: task, Queue: queue, Actor: actor})
	if err := f.pub.Publish(ctx, queue, task, nil); err != nil {
		f.work.done(task, at)
		return err
	}
	return nil
}

// PublishTo publishes task to exchange with routing key, mandatory, and
// waits for the broker's confirm. The enqueued events name the queues the
// topology's bindings route it to; a message the broker returns (no
// binding matched) is reported lost.
func (f *Flow) PublishTo(ctx context.Context, actor, exchange, key, task string) error {
	topo := f.topology()
	if !topo.HasExchange(exchange) {
		return fmt.Errorf("rabbit: publishing to exchange %s: %w", exchange, flow.ErrNoRoute)
	}
	f.routeMu.Lock()
	defer f.routeMu.Unlock()
	routes := topo.Route(exchange, key)
	expected := make([]string, len(routes))
	for i, q := range routes {
		expected[i] = f.expect(task, q)
		f.stream.Emit(lab.Event{Kind: lab.Enqueued, Task: task, Queue: q, Actor: actor, Note: flow.RoutedNote(exchange, key)})
	}
	returned, err := f.publishMandatory(ctx, exchange, key, task)
	if err != nil || returned {
		for _, at := range expected {
			f.work.done(task, at)
		}
	}
	if err == nil && !returned {
		for _, q := range routes {
			f.expectWait(topo, q)
		}
	}
	switch {
	case err != nil:
		return err
	case !returned:
		return nil
	case len(routes) == 0:
		for _, e := range flow.Unroutable(actor, exchange, key, task, "the broker returned it (published mandatory)") {
			f.stream.Emit(e)
		}
	default: // the broker disagrees with the topology it was given
		for _, q := range routes {
			f.stream.Emit(lab.Event{Kind: lab.Lost, Task: task, Queue: q, Actor: actor, Note: "the broker returned it as unroutable (published mandatory)"})
		}
	}
	return fmt.Errorf("rabbit: %s to exchange %s, key %q: %w", task, exchange, key, flow.ErrUnroutable)
}

// publishMandatory publishes task's message to exchange with key,
// mandatory, through the publisher's one path (which survives a lost
// channel), and reports whether the broker returned it.
func (f *Flow) publishMandatory(ctx context.Context, exchange, key, task string) (returned bool, err error) {
	err = f.pub.PublishTo(ctx, exchange, key, task)
	if errors.Is(err, ErrReturned) {
		return true, nil
	}
	return false, err
}

// apply carries out dec on delivery d from consumer c. The event comes
// first; a settle that fails leaves the message with the broker, which
// hands it out again (a redelivered event), so nothing is lost unseen.
// The handling of d ends (work.done) only once the broker has it settled.
func (f *Flow) apply(ctx context.Context, c flow.Consumer, d *Delivery, fd *flow.Delivery, dec flow.Decision) {
	topo := f.topology()
	e := lab.Event{Task: d.Task, Queue: d.Queue, Actor: c.Actor, Attempt: fd.Attempt}
	switch dec.Action {
	case flow.ActAck:
		f.ack(d)
	case flow.ActRetry:
		via, ok := topo.Queue(dec.To)
		brokerCounts := c.RetryHeader == ""
		if !ok || (brokerCounts && topo.DeadLetterTarget(d.Queue) != via.Name) {
			f.fail(d, e, fmt.Errorf("%s does not dead-letter to %s; count attempts in a header to republish there: %w", d.Queue, dec.To, flow.ErrNoRoute))
			return
		}
		if err := flow.CheckDelay(via, dec, c.RetryHeader); err != nil {
			f.fail(d, e, err)
			return
		}
		e.Kind, e.Via, e.To, e.DelayMs = lab.Scheduled, via.Name, topo.Settle(via.Name), via.TTL.Milliseconds()
		if via.Role == flow.Delay {
			f.retryAfter(ctx, c, d, fd, e, dec)
			return
		}
		if brokerCounts {
			e.Note = fmt.Sprintf("rejected: the broker dead-letters it into %s, x-message-ttl %s", via.Name, via.TTL)
			f.stream.Emit(e)
			f.s.watch.Expect(via.TTL) // the broker's move: no publish of the run's counts it
			f.move(d, e.To, d.Reject)
			return
		}
		e.Note = fmt.Sprintf("republished to %s with %s=%d, then acked", via.Name, c.RetryHeader, fd.Attempt)
		f.stream.Emit(e)
		f.republish(ctx, d, via.Name, e.To, withCount(d.Headers, c.RetryHeader, fd.Attempt, dec.Reason))
	case flow.ActPark:
		e.Kind, e.To, e.Note = lab.DeadLettered, dec.To, dec.Reason
		f.stream.Emit(e)
		if c.RetryHeader == "" && topo.DeadLetterTarget(d.Queue) == dec.To {
			f.move(d, dec.To, d.Reject) // the queue's own dead-letter route; x-death records it
			return
		}
		headers := copyHeaders(d.Headers)
		headers[ReasonHeader] = dec.Reason
		f.republish(ctx, d, dec.To, dec.To, headers)
	case flow.ActRequeue:
		q, _ := topo.Queue(d.Queue)
		e.Kind, e.To = lab.Moved, d.Queue
		e.Note = "basic.nack, requeue: " + RequeuePlace(q.Quorum, false, f.BrokerVersion()) // a flow.Queue declares no x-delivery-limit
		e.Place = RequeueAt(q.Quorum, false, f.BrokerVersion())
		f.stream.Emit(e)
		f.move(d, d.Queue, func() error { return d.Nack(false, true) })
	case flow.ActDrop:
		e.Kind, e.Note = lab.Dropped, dec.Reason
		f.stream.Emit(e)
		f.ack(d)
	}
}

// retryAfter publishes a copy of d to delay queue e.Via with its own
// expiration (dec.Delay) and the consumer's retry header incremented,
// confirmed, then acks d: seed 002's publishToRetryQueue. The broker
// dead-letters the copy onward when it expires, which it does only at the
// head of the queue.
func (f *Flow) retryAfter(ctx context.Context, c flow.Consumer, d *Delivery, fd *flow.Delivery, e lab.Event, dec flow.Decision) {
	expiration := Expiration(f.s.Clock, dec.Delay)
	e.DelayMs = dec.Delay.Milliseconds()
	e.Note = fmt.Sprintf("%s %s (%s ms real) on a copy republished to %s with %s=%d, then acked",
		flow.ExpirationNote, dec.Delay, expiration, e.Via, c.RetryHeader, fd.Attempt)
	f.stream.Emit(e)
	f.republishExpiring(ctx, d, e.Via, e.To, withCount(d.Headers, c.RetryHeader, fd.Attempt, dec.Reason), expiration)
}

// move settles the delivery with settle, expecting the message in queue
// to (where the broker takes it) if a consumer of the run waits there.
// A settle that returns nil was only written to the socket: a reject has
// no reply, so the flow remembers where it sent the message until it
// arrives there (inflight.rejected), in case the broker never read it.
func (f *Flow) move(d *Delivery, to string, settle func() error) {
	at := f.expect(d.Task, to)
	if err := settle(); err != nil {
		f.work.done(d.Task, at)
		return // the broker hands it out again
	}
	f.work.moved(d.Task, d.Queue, at)
}

// republish publishes a copy of d to queue with headers, confirmed, then
// acks d; the copy settles in settlesIn. A publish that fails puts d back
// on its queue (a nack with requeue) rather than leaving it unacked.
func (f *Flow) republish(ctx context.Context, d *Delivery, queue, settlesIn string, headers amqp.Table) {
	f.republishExpiring(ctx, d, queue, settlesIn, headers, "")
}

// republishExpiring is republish with the copy's expiration set ("" for
// none).
func (f *Flow) republishExpiring(ctx context.Context, d *Delivery, queue, settlesIn string, headers amqp.Table, expiration string) {
	at := f.expect(d.Task, settlesIn)
	if err := f.pub.RepublishExpiring(ctx, queue, d, headers, expiration); err != nil {
		f.work.done(d.Task, at)
		f.s.Logger.Warn("rabbit: republish failed; the message goes back to its queue", "task", d.Task, "queue", queue, "err", err.Error())
		_ = d.Nack(false, true) // back to its queue, or redelivered after a reconnect: in flight either way
		return
	}
	f.ack(d)
}

// ack acknowledges d and ends its handling. An ack that fails leaves the
// message with the broker, which hands it out again: still in flight.
func (f *Flow) ack(d *Delivery) {
	if d.Ack() == nil {
		f.work.done(d.Task, d.Queue)
	}
}

// fail reports a decision the topology cannot carry out (a lesson's
// mistake): the message is acked away with a lost event saying why, and
// Wait returns the error.
func (f *Flow) fail(d *Delivery, e lab.Event, err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
	e.Kind, e.Note = lab.Lost, err.Error()
	f.stream.Emit(e)
	f.ack(d)
}

// expect records one more message of task on its way to queue, under the
// consumed queue it settles in (flow.Topology.Settle), and returns that queue
// for work.done should the move fail.
func (f *Flow) expect(task, queue string) string {
	at := f.topology().Settle(queue)
	f.work.add(task, at)
	return at
}

// Wait blocks until every message the run published or moved into a
// consumed queue has been handled and every task has a final fate, within
// the session's bounds (Watch.WaitSettled: a queue deleted from outside,
// a broker gone, no progress for its patience), or ctx ends.
func (f *Flow) Wait(ctx context.Context) error {
	if err := f.s.watch.WaitSettled(ctx, f.stream, func() bool { return f.work.idle(f.isConsumed) }); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Expect says something the run scheduled happens within lesson duration
// d from now (flow.Expecter): a lesson's own timer, which the session's
// watchdog counts as progress to come (Watch.Expect).
func (f *Flow) Expect(d time.Duration) { f.s.watch.Expect(d) }

// expectWait counts the TTL of queue (seed name) in topo, where a message
// the run published to an exchange went: the session sees only the
// exchange.
func (f *Flow) expectWait(topo flow.Topology, queue string) {
	if q, ok := topo.Queue(queue); ok {
		f.s.watch.Expect(q.TTL)
	}
}

// Depth is how many messages are ready in queue.
func (f *Flow) Depth(ctx context.Context, queue string) (int, error) {
	return f.s.topo.Depth(ctx, queue)
}

// Peek reads up to n messages at the head of queue with basic.get and
// leaves them there (Guest.Peek).
func (f *Flow) Peek(ctx context.Context, queue string, n int) ([]flow.Delivery, error) {
	ds, err := f.s.guest.Peek(ctx, queue, n)
	out := make([]flow.Delivery, len(ds))
	for i, d := range ds {
		out[i] = flow.Delivery{Task: d.Task, Queue: queue, Attempt: d.Attempt(), Body: d.Body, Headers: headersOf(&d)}
	}
	return out, err
}

// Interrupt cuts every consumer's connection, as a crash of the worker
// process would: unacked messages go back to their queues, consumers
// reconnect.
func (f *Flow) Interrupt() { f.s.InterruptConsumers() }

// Close deletes the flow's exchanges, stops the consumers and deletes the
// queues the run created. A task still pending then is reported lost: with
// the session's failure as the reason when the run could not go on (a
// queue deleted from outside, a broker gone) or the clean-up failed (the
// broker out of reach), otherwise because deleting the queues discarded it.
// It returns the first error of the clean-up; what it could not delete,
// the session lists (Topo.Left) and tries again (Topo.TidyLeft).
func (f *Flow) Close(ctx context.Context) error {
	ctx = cleaning(ctx)
	f.mu.Lock()
	stops := f.stops
	f.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	f.batches.Wait()
	_ = f.pub.Close()
	if err := f.s.Err(); err != nil {
		ReportLost(f.stream, "Cleanup", "the run could not go on: "+err.Error())
	}
	f.mu.Lock()
	exchanges := f.exchanges
	f.mu.Unlock()
	if f.s.Keep {
		exchanges = nil // the run's queues stay, and the exchanges that route to them
	}
	xerr := f.s.topo.deleteExchanges(ctx, exchanges) // the session remembers what it left (Left)
	if xerr != nil {
		f.s.Logger.Warn("rabbit: clean-up left exchanges behind", "exchanges", exchanges, "err", xerr.Error())
	}
	if err := f.s.Close(ctx); err != nil {
		// The broker is out of reach (the clean-up failed too): whatever
		// is still pending ends here, and the stream says why.
		ReportLost(f.stream, "Cleanup", "the run ended without it: "+err.Error())
		return err
	}
	if !f.s.Keep { // kept, a message is still where it was: its task stays pending
		ReportDiscarded(f.stream, "Cleanup")
	}
	return xerr
}

func (f *Flow) topology() flow.Topology {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.topo
}

// withCount returns a copy of headers with header set to count and the
// last error beside it (reasonHeaderFor).
func withCount(headers amqp.Table, header string, count int, reason string) amqp.Table {
	out := copyHeaders(headers)
	out[header] = int64(count)
	out[reasonHeaderFor(header)] = reason
	return out
}

// isConsumed reports whether the run consumes seed queue queue.
func (f *Flow) isConsumed(queue string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.consumed[queue]
}

// inflight counts, per task and queue, the messages the run put on their
// way to that queue and has not yet settled: it is how the flow knows a
// delivery is one of its tasks (a message with the run's app-id but an id
// it never published, or a copy of a task it already settled, is not) and
// when nothing is left to handle (idle). Counting per task keeps a
// duplicate from cancelling another task's count.
//
// It also remembers each task's last reject until the message arrives
// where the reject sent it. A reject (basic.nack) is a frame the broker
// never answers: one written just before its connection died may never
// have been read, and then the broker hands the message out again, marked
// redelivered, in the queue it never left. A settled message cannot come
// back there (a dead-lettered message is a new one where it goes, and
// not redelivered), so such a copy is the task itself, still to handle,
// not a copy of one the run settled (reclaim). Seen as a task left
// pending in the fault suite's close/q10 on a busy machine: its reject
// was written, then its redelivery acked away.
type inflight struct {
	mu       sync.Mutex
	n        map[taskAt]int
	rejected map[string]reject // by task
}

// reject is where a task's last reject took it: from the queue it was
// consumed in to the consumed queue it settles in.
type reject struct{ from, to string }

// taskAt is one task's messages in one queue (seed name).
type taskAt struct{ task, queue string }

func (w *inflight) add(task, queue string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[taskAt]int{}
	}
	w.n[taskAt{task, queue}]++
}

func (w *inflight) done(task, queue string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := taskAt{task, queue}
	if w.n[k] <= 1 {
		delete(w.n, k) // the last one, a duplicate, or a message the run never sent
		return
	}
	w.n[k]--
}

// moved records task's message settled in from on its way to to: from's
// count goes, to's was added when the move began (Flow.expect). A move
// into the queue it left (a requeue, a loop's wait queue) needs no
// record: its copy is expected there either way.
func (w *inflight) moved(task, from, to string) {
	w.done(task, from)
	if from == to {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rejected == nil {
		w.rejected = map[string]reject{}
	}
	w.rejected[task] = reject{from, to}
}

// arrived forgets task's reject once its message is where it went.
func (w *inflight) arrived(task, queue string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.rejected[task]; ok && r.to == queue {
		delete(w.rejected, task)
	}
}

// reclaim undoes task's last reject if it left queue: the broker handed
// the message out again there, so the reject never reached it. It
// reports whether it did.
func (w *inflight) reclaim(task, queue string) bool {
	w.mu.Lock()
	r, ok := w.rejected[task]
	if !ok || r.from != queue {
		w.mu.Unlock()
		return false
	}
	delete(w.rejected, task)
	w.mu.Unlock()
	w.done(task, r.to)
	w.add(task, queue)
	return true
}

// has reports whether a message of task is expected in queue.
func (w *inflight) has(task, queue string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[taskAt{task, queue}] > 0
}

// idle reports whether nothing is expected in a consumed queue (messages
// parked in a DLQ nobody consumes stay where they are).
func (w *inflight) idle(consumed func(queue string) bool) bool {
	w.mu.Lock()
	keys := make([]taskAt, 0, len(w.n))
	for k := range w.n {
		keys = append(keys, k)
	}
	w.mu.Unlock()
	for _, k := range keys {
		if consumed(k.queue) {
			return false
		}
	}
	return true
}

// The optional interfaces of the flow seam the broker mechanism has.
var (
	_ flow.Backend     = (*Flow)(nil)
	_ flow.Inspector   = (*Flow)(nil)
	_ flow.Interrupter = (*Flow)(nil)
	_ flow.Describer   = (*Flow)(nil)
	_ flow.BrokerInfo  = (*Flow)(nil)
	_ flow.Batcher     = (*Flow)(nil)
	_ flow.Expecter    = (*Flow)(nil)
)
