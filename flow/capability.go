package flow

import (
	"context"
	"time"

	"github.com/queuelab/qlab/lab"
)

// The optional interfaces a Backend may have beside the core. A lesson
// that needs one asks for it with a type assertion on the interface:
//
//	in, ok := b.(flow.Inspector)
//
// and says what it does without it. No lesson names a concrete backend.

// Inspector reads queues without consuming them.
type Inspector interface {
	// Depth is how many messages wait in queue now.
	Depth(ctx context.Context, queue string) (int, error)
	// Peek reads up to n messages at the head of an unconsumed queue (a
	// DLQ) and leaves them in place.
	Peek(ctx context.Context, queue string, n int) ([]Delivery, error)
}

// Interrupter can make the run's planned failure happen: what happens when
// the process running the workers dies (see Features.SurvivesCrash).
type Interrupter interface {
	Interrupt()
}

// BrokerInfo is a backend on a real broker: its facts are what a lesson
// names beside a measured figure, and its deliveries carry headers.
type BrokerInfo interface {
	// BrokerVersion is the broker's version as it reports it ("3.10.8").
	BrokerVersion() string
}

// Describer says what a backend can and cannot do (Features).
type Describer interface {
	Features() Features
}

// Features says what a backend can and cannot do, so shared checks (the
// parity suite, compare) expect only what is true for it.
type Features struct {
	// SurvivesCrash: messages outlive the process that handles them.
	SurvivesCrash bool
	// WaitDepth: a message sitting out a delay is visible in a queue.
	WaitDepth bool
	// ExactTime: delays and stamps are exact lesson time (a fake clock),
	// not measured real time.
	ExactTime bool
}

// FeaturesOf is what b says it can do; the zero Features (nothing
// promised) for a backend that does not say.
func FeaturesOf(b Backend) Features {
	if d, ok := b.(Describer); ok {
		return d.Features()
	}
	return Features{}
}

// Facts are what a run can say about the mechanism it ran on, for the
// tables that name it beside a measured figure.
type Facts struct {
	Broker  bool   // a real broker (BrokerInfo), whose deliveries carry headers
	Version string // the broker's version; "" without one
}

// FactsOf asks b for its facts (BrokerInfo).
func FactsOf(b Backend) Facts {
	info, ok := b.(BrokerInfo)
	if !ok {
		return Facts{}
	}
	return Facts{Broker: true, Version: info.BrokerVersion()}
}

// On names the mechanism for a table's title: "RabbitMQ 3.10.8", or "in
// memory".
func (f Facts) On() string {
	if f.Broker {
		return "RabbitMQ " + f.Version
	}
	return "in memory"
}

// Expecter is a backend whose run can look stalled while it waits: a
// broker has no idle signal, so its watchdog gives a run up when no task
// moves for a while. A lesson that waits on a timer of its own (a handler
// that sleeps before it nacks, a scheduler's tick) says so first, and the
// watchdog counts that wait as progress to come. Waits the backend
// schedules itself (a TTL, a per-message expiration) it counts without
// being told.
type Expecter interface {
	// Expect says something the run scheduled happens within d of lesson
	// time from now.
	Expect(d time.Duration)
}

// Expect tells b that something the run scheduled happens within d of
// lesson time from now (Expecter); a backend without a watchdog (in
// memory, whose timers it sees) ignores it.
func Expect(b Backend, d time.Duration) {
	if e, ok := b.(Expecter); ok {
		e.Expect(d)
	}
}

// WaitFor waits d of lesson time on clock, bounded by ctx, after telling b
// it will (Expect): a lesson's own timer that a broker's watchdog must not
// take for a stall.
func WaitFor(ctx context.Context, b Backend, clock lab.Clock, d time.Duration) error {
	Expect(b, d)
	return clock.Wait(ctx, d)
}
