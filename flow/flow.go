// Package flow is the seam between a lesson that runs on both backends and
// the mechanism each backend supplies.
//
// A lesson states its flow once: the Topology it needs, what its producer
// publishes, and for each delivery a Handler that returns a Decision (ack,
// retry through a named wait queue, park in a dead-letter queue, requeue,
// drop). A Backend carries the decision out: package inmem with channels,
// goroutines and time.AfterFunc; package rabbit with a reject into a TTL
// wait queue, a republish with a retry header, a publish to the DLQ. Both
// report what happened as the same lab events, so one parity suite can
// check that the two backends agree on every task's fate and attempts.
//
//	lesson:   Topology ─ Publish ─ Handler(Delivery) → Decision
//	                 │                                   │
//	backend:  inmem: channels, AfterFunc      rabbit: reject / republish / DLX
package flow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuelab/qlab/lab"
)

// Delivery is one message handed to a Handler.
type Delivery struct {
	Task  string // the lab task the message carries
	Queue string // the seed name of the queue it was consumed from
	// Attempt is the attempt this delivery stands for: 1 on the first
	// delivery, one more after each retry, as the backend counts them (in
	// memory the task's own counter; on RabbitMQ x-death's rejects or the
	// consumer's retry header). A redelivery repeats the attempt it
	// interrupted.
	Attempt int
	// Redelivered is true when the broker hands the message out again
	// because an earlier delivery was never settled.
	Redelivered bool
	Body        []byte
	// Headers are the message's AMQP headers (x-death included) on
	// RabbitMQ; nil in memory, where a message has none. Whether a backend
	// carries headers is a capability (BrokerInfo), not their presence.
	Headers map[string]any
}

// Event returns an event about d by actor, with its task, queue and
// attempt filled in: the start of a lab.Stream.Attempt report.
func (d *Delivery) Event(actor string) lab.Event {
	return lab.Event{Task: d.Task, Queue: d.Queue, Actor: actor, Attempt: d.Attempt}
}

// Action is what a Decision asks the backend to do with a delivery.
type Action int

// The actions a handler can decide on.
const (
	ActAck     Action = iota // processed: forget the message
	ActRetry                 // send it round a wait queue and back
	ActPark                  // park it in a dead-letter queue
	ActRequeue               // put it back on the queue it came from, at once
	ActDrop                  // discard it: gone, and the stream says so
)

// Decision is a handler's verdict on one delivery.
type Decision struct {
	Action Action
	// To names the wait queue of a retry or the DLQ of a park.
	To string
	// Reason says why: the error of a retry, the cause of a park or drop.
	Reason string
	// Delay is a retry's own wait through a delay queue (RetryAfter): the
	// message's expiration. 0 for a wait queue, whose TTL decides.
	Delay time.Duration
}

// Ack says the delivery was processed.
func Ack() Decision { return Decision{Action: ActAck} }

// Retry sends the message through wait queue via, whose TTL and
// dead-letter route bring it back, because of cause.
func Retry(via string, cause error) Decision {
	return Decision{Action: ActRetry, To: via, Reason: errText(cause)}
}

// Park parks the message in dead-letter queue dlq, saying why.
func Park(dlq, reason string) Decision { return Decision{Action: ActPark, To: dlq, Reason: reason} }

// Requeue puts the message straight back on its queue.
func Requeue() Decision { return Decision{Action: ActRequeue} }

// Drop discards the message after its final failure, saying why.
func Drop(reason string) Decision { return Decision{Action: ActDrop, Reason: reason} }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Handler decides what happens to one delivery. A backend calls each
// consumer's handler from one goroutine, one delivery at a time, and
// carries the decision out before the next (a consumer's Prefetch lets
// more wait in its hands meanwhile).
type Handler func(ctx context.Context, d *Delivery) Decision

// Consumer is one worker on one queue.
type Consumer struct {
	Queue string // seed name of the queue to consume
	Actor string // the worker's name in events
	// RetryHeader, when set, makes the consumer count attempts itself: it
	// reads the attempt from this header, and a retry republishes the
	// message to the wait queue with the header incremented (then acks).
	// Empty, the broker counts: a retry rejects the message into the wait
	// queue its queue dead-letters to, and x-death's rejects give the
	// attempt. In memory the task's own counter plays both parts.
	RetryHeader string
	// Prefetch is how many deliveries the consumer may hold unsettled at
	// once: the one being handled and those waiting behind it in the
	// consumer's hands, no longer in the queue (basic.qos on RabbitMQ).
	// 0 means 1. A batch consumer holds at least its batch's Size.
	Prefetch int
	Handle   Handler
}

// Window is c's prefetch, at least 1 and at least min.
func (c Consumer) Window(min int) int { return max(c.Prefetch, min, 1) }

// Backend runs a flow on one mechanism: the core every backend has.
// Declare the topology, start every consumer, then publish; Wait returns
// once nothing is left to do; Close releases what the run holds. A
// Backend serves one run and is not reused.
//
// What only some mechanisms can do (read a queue without consuming it,
// crash the process, report broker facts, deliver in batches) is an
// optional interface beside this one (capability.go), which a lesson
// discovers with a type assertion on that interface, never on a concrete
// backend type (watermill's optional interfaces).
type Backend interface {
	// Kind names the mechanism, as events stamp it.
	Kind() lab.Backend
	// Declare makes t's queues, exchanges and bindings exist.
	Declare(ctx context.Context, t Topology) error
	// Consume starts c. Start every consumer before the first Publish.
	Consume(ctx context.Context, c Consumer) error
	// Publish puts a new task on queue on behalf of actor, reporting it
	// as enqueued. It returns once the backend holds the message.
	Publish(ctx context.Context, actor, queue, task string) error
	// PublishTo puts a new task on exchange with routing key: the
	// exchange's bindings (direct, topic or fanout, as the Topology
	// declares them) decide which queues get it, each reported as
	// enqueued. A key no binding matches loses the task, and the stream
	// says so: PublishTo returns ErrUnroutable (on RabbitMQ the broker
	// returns the message, published mandatory). An exchange the topology
	// does not declare is ErrNoRoute. It returns once the backend holds
	// the message or has reported it lost.
	PublishTo(ctx context.Context, actor, exchange, key, task string) error
	// Wait blocks until no message is queued, waiting or being handled in
	// a consumed queue, or ctx ends (then it returns ctx's error).
	Wait(ctx context.Context) error
	// Close stops the consumers and releases what the run created. It
	// reports every task it discards as lost.
	Close(ctx context.Context) error
}

// ErrNoRoute means a decision asked for a move the topology cannot make
// with the consumer's counting (for example a broker-counted retry into a
// wait queue its queue does not dead-letter to): a lesson's mistake.
var ErrNoRoute = errors.New("flow: no such route in the topology")

// ErrUnroutable means a message published to an exchange matched none of
// its bindings: no queue took it, and the stream reports it lost.
var ErrUnroutable = errors.New("flow: no binding matches the routing key")

// Unroutable is the event that reports task, published by actor to
// exchange with key, lost because no binding matched: the task is
// created (enqueued at the exchange) and lost in the same breath, so its
// summary says what became of it.
func Unroutable(actor, exchange, key, task, how string) []lab.Event {
	at := lab.Event{Task: task, Queue: exchange, Actor: actor}
	enq, lost := at, at
	enq.Kind, enq.Note = lab.Enqueued, fmt.Sprintf("to exchange %s with key %q", exchange, key)
	lost.Kind, lost.Note = lab.Lost, fmt.Sprintf("unroutable: no binding of %s matches key %q; %s", exchange, key, how)
	return []lab.Event{enq, lost}
}

// RoutedNote is the note of the enqueued event of a task that reached its
// queue through exchange with key.
func RoutedNote(exchange, key string) string {
	return fmt.Sprintf("via exchange %s, key %q", exchange, key)
}
