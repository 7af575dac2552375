package mail

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
)

// The service's actors.
const (
	WorkerActor = "Mail-Worker"
	RouterActor = "Router" // + "-1", "-2": one per scheduler process
)

// Hooks let a caller keep its own books of what the service does, beyond
// the events it emits; a nil hook is skipped. Each runs on the goroutine
// of the consumer that calls it.
type Hooks struct {
	// Sent: the worker sent mail task at lesson time at.
	Sent func(task string, at time.Duration)
	// Waits: the router put mail task in wait queue queue (seed name).
	Waits func(task, queue string)
}

// StartWorker consumes MailQueue on s: each delivery is a mail whose time
// has come, which the worker sends with the mock mailer, reporting to
// stream. A body that is not a mail is held with the reason, never sent.
// The worker runs until s closes or ctx ends.
func StartWorker(ctx context.Context, s *rabbit.Session, stream *lab.Stream, cal Calendar, hooks Hooks) error {
	mailer := inmem.Mailer{Stream: stream, Customer: true}
	opts := rabbit.ConsumerOptions{Queue: MailQueue, Actor: WorkerActor, Prefetch: 1, Stream: stream}
	_, err := s.Consume(ctx, opts, func(ctx context.Context, d *rabbit.Delivery) {
		m, err := Decode(d.Body)
		if err != nil { // never "send" a mail nobody could read: hold it with the reason
			s.Guest().Hold(ctx, d, err.Error())
			return
		}
		stream.Emit(lab.Event{Kind: lab.Started, Task: d.Task, Queue: MailQueue, Actor: WorkerActor, Attempt: d.Attempt()})
		mailer.Send(d.Task, inmem.Mail{To: m.To, Subject: m.Subject, Body: "scheduled for " + m.ScheduledTime})
		if hooks.Sent != nil {
			hooks.Sent(d.Task, stream.Clock().Elapsed())
		}
		stream.Emit(lab.Event{Kind: lab.Succeeded, Task: d.Task, Queue: MailQueue, Actor: WorkerActor, Attempt: d.Attempt(),
			Note: "sent at " + cal.Now().Format(ISOMillis)})
		_ = d.Ack() // a lost ack means a redelivery, which the consumer reports
	})
	return err
}

// Router is one scheduler process's router: a connection of its own, a
// confirming publisher, and a consumer of RouterQueue. It keeps no state:
// where a mail is and when it is due live on the broker.
type Router struct {
	gen    int
	s      *rabbit.Session
	pub    *rabbit.Publisher
	stream *lab.Stream
	cal    Calendar
	hooks  Hooks
	// failedHops counts each mail's failed re-publishes, so a hop that
	// keeps failing ends in a lost event instead of a hot requeue loop.
	// Only the router's one consumer goroutine touches it.
	failedHops map[string]int
}

// StartRouter opens router gen (named Router-gen) on a sibling of s,
// whose names must have Topology declared, reporting to stream. It runs
// until Stop or ctx ends.
func StartRouter(ctx context.Context, s *rabbit.Session, stream *lab.Stream, cal Calendar, gen int, hooks Hooks) (*Router, error) {
	sib, err := s.Sibling(ctx)
	if err != nil {
		return nil, err
	}
	pub, err := sib.Publisher(ctx)
	if err != nil {
		_ = sib.Close(ctx)
		return nil, err
	}
	r := &Router{gen: gen, s: sib, pub: pub, stream: stream, cal: cal, hooks: hooks}
	opts := rabbit.ConsumerOptions{Queue: RouterQueue, Actor: r.Name(), Prefetch: 1, Stream: stream}
	if _, err := sib.Consume(ctx, opts, r.route); err != nil {
		r.Stop(ctx)
		return nil, err
	}
	return r, nil
}

// Name is the router's actor name: Router-gen.
func (r *Router) Name() string { return fmt.Sprintf("%s-%d", RouterActor, r.gen) }

// Publish sends a mail to queue (seed name) with its scheduledTime
// header, on the router's connection, and returns once the broker
// confirmed it.
func (r *Router) Publish(ctx context.Context, queue, task string, body []byte, scheduled string) error {
	return r.pub.PublishMessage(ctx, queue, Publishing(task, body, scheduled))
}

// Stop closes the router's connection: an unacked mail goes back to
// RouterQueue, and nothing it knew is lost, because it knew nothing the
// broker does not hold.
func (r *Router) Stop(ctx context.Context) {
	_ = r.s.Close(ctx) // the consumer first, then the connection and the publisher's channel
}

// route is the router's handler: a mail came out of a wait queue; send it
// on to the next level, or to the mail queue once it is due. Everything
// it needs is in the message.
func (r *Router) route(ctx context.Context, d *rabbit.Delivery) {
	scheduled, _ := d.Headers[DueHeader].(string)
	due, _, err := ParseScheduledTime(scheduled, r.cal.Now())
	if err != nil { // not one of ours: the router cannot know when to send it
		r.stream.Emit(lab.Event{Kind: lab.Dropped, Task: d.Task, Queue: RouterQueue, Actor: r.Name(), Note: err.Error()})
		_ = d.Reject()
		return
	}
	from := RouterQueue
	if len(d.Deaths) > 0 {
		from = r.s.Names.Seed(d.Deaths[0].Queue)
	}
	remaining := due.Sub(r.cal.Now())
	next, note := MailQueue, dueNote(remaining)
	if level, ok := NextLevel(remaining); ok {
		next, note = LevelQueue(level), fmt.Sprintf("due in %s: wait %s more", remaining.Round(time.Millisecond), level)
	}
	if next != MailQueue && r.hooks.Waits != nil {
		r.hooks.Waits(d.Task, next)
	}
	if next == from {
		note = "republished at the tail; " + note // lab.Moved: a note must say where
	}
	r.stream.Emit(lab.Event{Kind: lab.Moved, Task: d.Task, Queue: from, To: next, Actor: r.Name(), Note: note})
	// Publish, confirm, then ack: one step that a scheduler being stopped
	// lets finish, bounded in real time. Cancelled halfway, the mail could
	// be forwarded and requeued both, and delivered twice.
	hop, cancel := context.WithTimeout(context.WithoutCancel(ctx), hopTimeout)
	defer cancel()
	if err := r.Publish(hop, next, d.Task, d.Body, scheduled); err != nil {
		r.hopFailed(d, err)
		return
	}
	_ = d.Ack() // a lost ack means a redelivery: the mail hops twice, but no mail is lost
}

// hopTimeout bounds one router hop (publish and confirm) in real time.
const hopTimeout = 5 * time.Second

// hopTries is how many times the router tries to forward one mail. The
// publisher already rides out a dropped channel or a restart, so a hop
// that fails this often will not succeed by trying again at once.
const hopTries = 3

// hopFailed settles a mail the router could not forward. Under hopTries
// it is requeued (not acked: the broker hands it out again and the
// consumer reports the redelivery); after that it is rejected and
// reported lost with the reason, so a broken route ends instead of
// spinning.
func (r *Router) hopFailed(d *rabbit.Delivery, err error) {
	if r.failedHops == nil {
		r.failedHops = map[string]int{}
	}
	r.failedHops[d.Task]++
	if r.failedHops[d.Task] < hopTries {
		r.s.Logger.Warn("mail: router could not re-publish; the mail stays in mail.router", "task", d.Task, "err", err.Error())
		_ = d.Nack(false, true)
		return
	}
	r.stream.Emit(lab.Event{Kind: lab.Lost, Task: d.Task, Queue: RouterQueue, Actor: r.Name(),
		Note: fmt.Sprintf("the router could not forward it in %d tries: %v", hopTries, err)})
	_ = d.Reject()
}

// dueNote says how close to its due time a mail goes to the mail queue.
func dueNote(remaining time.Duration) string {
	if remaining < 0 {
		return fmt.Sprintf("due: %s overdue, sending", (-remaining).Round(time.Millisecond))
	}
	return fmt.Sprintf("due in %s: close enough, sending", remaining.Round(time.Millisecond))
}

// Service is the whole service running for mails that arrive from
// outside a lesson (qlab serve): router 1 and the mail worker, each on a
// connection of its own.
type Service struct {
	worker *rabbit.Session
	router *Router
}

// StartService starts the router and the mail worker on siblings of s,
// whose names must have Topology declared, reporting to stream (whose
// clock must run at speed 1: scheduledTime is calendar time). Both run
// until ctx ends or Stop, which deletes nothing.
func StartService(ctx context.Context, s *rabbit.Session, stream *lab.Stream) (*Service, error) {
	worker, err := s.Sibling(ctx)
	if err != nil {
		return nil, err
	}
	cal := NewCalendar(stream.Clock())
	if err := StartWorker(ctx, worker, stream, cal, Hooks{}); err != nil {
		_ = worker.Close(ctx)
		return nil, err
	}
	router, err := StartRouter(ctx, worker, stream, cal, 1, Hooks{})
	if err != nil {
		_ = worker.Close(ctx)
		return nil, err
	}
	return &Service{worker: worker, router: router}, nil
}

// Stop closes the router's and the worker's connections: a mail either
// holds unacknowledged goes back to its queue.
func (sv *Service) Stop(ctx context.Context) {
	sv.router.Stop(ctx)
	_ = sv.worker.Close(ctx) // it declared nothing: this only stops the worker and closes the connection
}
