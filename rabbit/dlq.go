package rabbit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// This file is how an operator works a dead-letter queue over AMQP: read
// it without removing anything (Inspect, as the management API's
// ack_requeue_true does), read it the way its ack_requeue_false and
// reject_requeue_true do (Take, InspectRequeue),
// move messages back to a work queue (Replay) and empty it (Purge). The
// functions take broker names and a connection, so they work on any queue
// of any broker, not only a lab run's; lesson Q16 and `qlab dlq` share them.

// NoQueueError means a queue named to a DLQ operation does not exist (a
// passive declare answered 404 NOT_FOUND).
type NoQueueError struct{ Queue string }

// Error says so on one line, with how to list the queues that do exist.
func (e *NoQueueError) Error() string {
	return fmt.Sprintf("queue %s does not exist on this broker (list them with: rabbitmqctl list_queues name messages)", e.Queue)
}

// QueueDepth passively declares broker queue name and returns how many
// messages are ready in it. A missing queue is a *NoQueueError. The
// declare runs on a channel of its own: a 404 closes the channel it
// happens on, and the caller's channels must stay usable.
func QueueDepth(ctx context.Context, conn *amqp.Connection, name string) (int, error) {
	q, err := inspectOn(ctx, conn, name)
	if isNotFound(err) {
		return 0, &NoQueueError{Queue: name}
	}
	if err != nil {
		return 0, fmt.Errorf("checking queue %s: %w", name, err)
	}
	return q.Messages, nil
}

// Inspect reads up to n messages (n <= 0: all that are ready) from the
// head of broker queue name and leaves every one in place, in its order:
// it takes them with basic.get without acknowledging them, then closes
// its channel, which hands them all back to the queue, and returns once
// the queue shows them again (awaitBack, at most 2 s). The cost: the
// broker marks each one redelivered, so the next reader sees
// Redelivered=true. The deliveries returned must not be settled. With an
// error it returns the messages it read before it (see getMany).
func Inspect(ctx context.Context, conn *amqp.Connection, name string, n int) ([]amqp.Delivery, error) {
	return getMany(ctx, conn, name, n, false, nil)
}

// InspectRequeue reads up to n messages (n <= 0: all) like the management
// API's ackmode reject_requeue_true: it takes them with basic.get (without
// acknowledging), then rejects each with requeue, as the plugin does
// (rabbit_mgmt_wm_queue_get). They stay in the queue, marked redelivered.
// It must take them all before requeueing any: a message requeued at once
// would be the next basic.get's answer again. (The API's ack_requeue_true
// sends no reject: the plugin closes its channel, which is Inspect.)
func InspectRequeue(ctx context.Context, conn *amqp.Connection, name string, n int) ([]amqp.Delivery, error) {
	return getMany(ctx, conn, name, n, false, func(ch *amqp.Channel, last uint64) error {
		for tag := uint64(1); tag <= last; tag++ { // a channel of its own: its tags are 1 … last
			if err := ch.Reject(tag, true /* requeue */); err != nil {
				return err
			}
		}
		return nil
	})
}

// Take reads up to n messages (n <= 0: all) and removes them: basic.get
// with no-ack, so the broker forgets each message as it hands it over.
// That is what the management API's POST /api/queues/{vhost}/{name}/get
// with ackmode ack_requeue_false does (the plugin issues basic.get with
// no_ack=true): whoever "inspects" a DLQ that way deletes what they read.
// With an error it returns the messages it took before it: they are gone
// from the queue.
func Take(ctx context.Context, conn *amqp.Connection, name string, n int) ([]amqp.Delivery, error) {
	return getMany(ctx, conn, name, n, true, nil)
}

// getMany checks that queue name exists, then basic.gets up to n messages
// (n <= 0: as many as were ready when it started) on a channel of its own.
// With after set it calls it with the last delivery tag before closing
// the channel; closing returns whatever is still unacknowledged. Each
// broker call is bounded on its own (within), so a broker that stops
// answering part way ends the read with ErrNoAnswer and the messages read
// until then: a caller can show what it had.
func getMany(ctx context.Context, conn *amqp.Connection, name string, n int, noAck bool, after func(ch *amqp.Channel, last uint64) error) ([]amqp.Delivery, error) {
	depth, err := QueueDepth(ctx, conn, name)
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		n = depth
	}
	ch, err := withinValue(ctx, func() (*amqp.Channel, error) { return conn.Channel() })
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	var out []amqp.Delivery
	err = func() error {
		for len(out) < n {
			d, ok, err := withinValueOK(ctx, func() (amqp.Delivery, bool, error) { return ch.Get(name, noAck) })
			if err != nil || !ok {
				return err
			}
			out = append(out, d)
		}
		if after != nil && len(out) > 0 {
			last := out[len(out)-1].DeliveryTag
			return within(ctx, func() error { return after(ch, last) })
		}
		return nil
	}()
	// Closing hands every unacknowledged get back to the queue. A broker
	// that stopped answering will not answer channel.close either: the
	// close is left to finish with the connection.
	if errors.Is(err, ErrNoAnswer) {
		go func() { _ = ch.Close() }()
	} else {
		_ = within(ctx, ch.Close)
	}
	if err != nil {
		return out, fmt.Errorf("reading %s, after %d of %d messages: %w", name, len(out), n, err)
	}
	if !noAck && len(out) > 0 {
		awaitBack(ctx, depth, func(ctx context.Context) (int, error) { return QueueDepth(ctx, conn, name) })
	}
	return out, nil
}

// handBackTime bounds awaitBack: what a read handed back is in the
// queue again well within it, unless another reader took some.
const handBackTime = 2 * time.Second

// awaitBack waits, up to handBackTime, until depth (a queue's ready
// count) reads want again. The broker requeues what a closed channel
// held (or what was rejected with requeue) after its close-ok, on a
// loaded broker measurably later: without the wait, a read straight
// after a read that leaves messages in place finds some of them
// missing. It gives up quietly: a consumer elsewhere may have taken
// some meanwhile, which is not this read's to report.
func awaitBack(ctx context.Context, want int, depth func(context.Context) (int, error)) {
	ctx, cancel := context.WithTimeout(ctx, handBackTime) // bounds each read too
	defer cancel()
	_, _ = PollUntil(ctx, 10*time.Millisecond, 0, func() (bool, error) {
		n, err := depth(ctx)
		return err != nil || n >= want, nil
	})
}

// ReplayOptions tune Replay.
type ReplayOptions struct {
	// N is how many messages to move; 0 means as many as were ready when
	// Replay started (never more: a target that dead-letters back into
	// the source must not make Replay loop).
	N int
	// ResetRetries rewrites each message with ResetRetries before it is
	// published: a fresh retry budget.
	ResetRetries bool
}

// ReplayResult is what Replay did.
type ReplayResult struct {
	Moved []amqp.Delivery // the originals, in the order they were moved (acknowledged, gone from the source)
	Reset int             // how many of them ResetRetries changed
}

// ErrSameQueue means a replay named one queue as source and target.
var ErrSameQueue = errors.New("replay needs two different queues: replaying a queue into itself would loop")

// Replay moves messages from broker queue from to broker queue to, one at
// a time: basic.get (unacknowledged), publish a copy (body, properties and
// headers kept; rewritten when opts.ResetRetries) to to through the
// default exchange, mandatory, on a confirm channel; wait for the
// broker's confirm; only then acknowledge the original. A copy that is
// nacked or returned stops the replay with the original requeued.
//
// It never loses a message: if it is interrupted (an error, ctx ending,
// the process killed), the message in flight is unacknowledged and the
// broker puts it back in from. If that happens after the confirm but
// before the ack, the message is in both queues: a duplicate, not a loss.
func Replay(ctx context.Context, conn *amqp.Connection, from, to string, opts ReplayOptions) (ReplayResult, error) {
	var res ReplayResult
	if from == to {
		return res, ErrSameQueue
	}
	depth, err := QueueDepth(ctx, conn, from)
	if err != nil {
		return res, err
	}
	if _, err := QueueDepth(ctx, conn, to); err != nil {
		return res, err
	}
	n := opts.N
	if n <= 0 {
		n = depth
	}
	r, err := openReplay(ctx, conn)
	if err != nil {
		return res, err
	}
	defer r.close()
	for len(res.Moved) < n {
		d, ok, err := r.moveOne(ctx, from, to, opts.ResetRetries)
		if err != nil {
			return res, fmt.Errorf("replaying from %s to %s after %d moved: %w", from, to, len(res.Moved), err)
		}
		if !ok {
			break
		}
		res.Moved = append(res.Moved, d.original)
		if d.reset {
			res.Reset++
		}
	}
	return res, nil
}

// replayer holds Replay's two channels: one to get and ack on, one in
// confirm mode to publish on, with its basic.return notifications.
type replayer struct {
	get, pub *amqp.Channel
	returns  chan amqp.Return
}

type replayed struct {
	original amqp.Delivery
	reset    bool
}

func openReplay(ctx context.Context, conn *amqp.Connection) (*replayer, error) {
	return withinValue(ctx, func() (*replayer, error) {
		get, err := conn.Channel()
		if err != nil {
			return nil, err
		}
		pub, err := conn.Channel()
		if err == nil {
			err = pub.Confirm(false)
		}
		if err != nil {
			get.Close()
			return nil, err
		}
		return &replayer{get: get, pub: pub, returns: pub.NotifyReturn(make(chan amqp.Return, 1))}, nil
	})
}

// close closes both channels: a message got but not yet acknowledged goes
// back to its queue.
func (r *replayer) close() {
	_ = r.pub.Close()
	_ = r.get.Close()
}

// moveOne moves the message at the head of from to to; ok is false when
// from is empty.
func (r *replayer) moveOne(ctx context.Context, from, to string, reset bool) (replayed, bool, error) {
	return withinValueOK(ctx, func() (replayed, bool, error) {
		d, ok, err := r.get.Get(from, false /* autoAck */)
		if err != nil || !ok {
			return replayed{}, ok, err
		}
		msg := Copy(d)
		changed := false
		if reset {
			msg.Headers, msg.Body, changed = ResetRetries(msg.Headers, msg.Body)
		}
		dc, err := r.pub.PublishWithDeferredConfirmWithContext(ctx, "", to, true /* mandatory */, false /* immediate */, msg)
		if err == nil {
			err = WaitConfirm(ctx, dc)
		}
		select {
		case ret := <-r.returns: // handed over before the confirm that follows it
			err = fmt.Errorf("the broker returned the copy: %d %s", ret.ReplyCode, ret.ReplyText)
		default:
		}
		if err != nil {
			_ = d.Nack(false, true /* requeue: the original stays */)
			return replayed{}, false, err
		}
		return replayed{original: d, reset: changed}, true, d.Ack(false)
	})
}

// withinValueOK is withinValue for an f that also reports ok.
func withinValueOK[T any](ctx context.Context, f func() (T, bool, error)) (T, bool, error) {
	type pair struct {
		v  T
		ok bool
	}
	p, err := withinValue(ctx, func() (pair, error) {
		v, ok, err := f()
		return pair{v, ok}, err
	})
	return p.v, p.ok, err
}

// Copy is the publishing that recreates delivery d: body, every property
// and the headers (a copy of the map), as the replay publishes it.
func Copy(d amqp.Delivery) amqp.Publishing {
	var headers amqp.Table
	if d.Headers != nil {
		headers = maps.Clone(d.Headers)
	}
	return amqp.Publishing{
		Headers: headers, ContentType: d.ContentType, ContentEncoding: d.ContentEncoding,
		DeliveryMode: d.DeliveryMode, Priority: d.Priority, CorrelationId: d.CorrelationId,
		ReplyTo: d.ReplyTo, Expiration: d.Expiration, MessageId: d.MessageId, Timestamp: d.Timestamp,
		Type: d.Type, UserId: d.UserId, AppId: d.AppId, Body: d.Body,
	}
}

// deathHeaders are the headers the broker writes when it dead-letters a
// message (x-last-death-* since 3.13).
var deathHeaders = []string{"x-death", "x-first-death-queue", "x-first-death-reason", "x-first-death-exchange",
	"x-last-death-queue", "x-last-death-reason", "x-last-death-exchange"}

// ResetRetries gives a message a fresh retry budget: a JSON object body's
// top-level "retries" becomes 0 (seed 002's EmailJob counts there; the
// other fields are kept, re-encoded in key order), the lab's own counter
// header (RetryCountHeader) and the broker's death headers (x-death and
// x-first-/x-last-death-*) are removed. It returns the new headers and
// body, and whether anything changed. A body that is not a JSON object, or
// has no "retries", is left as it is.
func ResetRetries(headers amqp.Table, body []byte) (amqp.Table, []byte, bool) {
	changed := false
	var out amqp.Table
	if headers != nil {
		out = maps.Clone(headers)
	}
	for _, h := range append([]string{RetryCountHeader}, deathHeaders...) {
		if _, ok := out[h]; ok {
			delete(out, h)
			changed = true
		}
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil || fields == nil {
		return out, body, changed
	}
	if v, ok := fields["retries"]; !ok || string(v) == "0" {
		return out, body, changed
	}
	fields["retries"] = json.RawMessage("0")
	reset, err := json.Marshal(fields)
	if err != nil {
		return out, body, changed
	}
	return out, reset, true
}

// Purge removes every ready message from broker queue name and returns how
// many it removed. A missing queue is a *NoQueueError.
func Purge(ctx context.Context, conn *amqp.Connection, name string) (int, error) {
	if _, err := QueueDepth(ctx, conn, name); err != nil {
		return 0, err
	}
	n, err := withinValue(ctx, func() (int, error) {
		ch, err := conn.Channel()
		if err != nil {
			return 0, err
		}
		defer ch.Close()
		return ch.QueuePurge(name, false /* noWait */)
	})
	if err != nil {
		return 0, fmt.Errorf("purging %s: %w", name, err)
	}
	return n, nil
}
