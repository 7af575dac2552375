package rabbit

import (
	"context"
	"fmt"
	"slices"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Guest is the part of a Session that shares a broker with others
// (Session.Guest). Its contract: the run touches only its own messages.
// It claims the run's names before anything is declared (claim.go); every
// reader of the run's queues screens what it gets (NotATask, Sealed), and
// a message that is no task of the run is moved to the run's hold queue
// with a reason and counted (Hold, Foreign), never handled, deleted or
// left to be deleted unseen (foreign.go, screen.go, seal.go). Locks: see
// screening.
type Guest struct {
	s      *Session
	screen screening
}

// screening counts and holds the messages that are no task of the run.
// mu guards held, holding and pub; pubMu serialises creating pub and is
// held across the broker calls that declare the hold queue, taking mu
// only briefly inside.
type screening struct {
	mu      sync.Mutex
	held    int        // messages moved to the hold queue (Foreign)
	holding int        // holds under way (see holdActivity)
	pub     *Publisher // publishes to the hold queue; nil until the first one
	pubMu   sync.Mutex
}

// ForeignReasonHeader is the header a foreign message carries in the hold
// queue: why it was moved there and from where.
const ForeignReasonHeader = "qlab-foreign-reason"

// Foreign is how many messages the session's consumers moved to the hold
// queue, each counted once the broker confirmed its copy there: foreign
// ones the run did not publish (their AppId is not Names.Run) and
// malformed ones (see TaskProblem and Hold), which no handler ever
// settles.
func (g *Guest) Foreign() int {
	g.screen.mu.Lock()
	defer g.screen.mu.Unlock()
	return g.screen.held
}

// holdActivity is how many messages the session held so far, and
// whether it is busy now: holding one (a 10 MB copy takes a while) or
// publishing again after a lost channel (bounded by Session.GiveUpAfter).
// WaitSettled counts both as the run moving.
func (g *Guest) holdActivity() (held int, busy bool) {
	g.screen.mu.Lock()
	held, holding := g.screen.held, g.screen.holding
	g.screen.mu.Unlock()
	g.s.health.mu.Lock()
	defer g.s.health.mu.Unlock()
	return held, holding > 0 || g.s.health.retrying > 0
}

// moveToHold takes delivery d, met on seed queue queue, out of the run's way
// (see Screen for when): it logs it with reason, counts it, publishes a
// copy (properties and headers kept, plus ForeignReasonHeader) to the
// run's hold queue, and acks the original once the broker confirmed the
// copy. If that fails it rejects d without requeue, so the broker
// dead-letters it along the queue's route or drops it: requeueing would
// hand it straight back, a hot loop.
func (g *Guest) moveToHold(ctx context.Context, queue string, d amqp.Delivery, reason string) {
	g.screen.mu.Lock()
	g.screen.holding++
	g.screen.mu.Unlock()
	reason += "; found in " + g.s.Names.Of(queue)
	err := g.copyToHold(ctx, d, reason)
	if err == nil {
		err = d.Ack(false)
	}
	g.screen.mu.Lock()
	g.screen.holding--
	if err == nil { // counted once its copy is in the hold queue, as Foreign says
		g.screen.held++
	}
	g.screen.mu.Unlock()
	if err != nil {
		_ = d.Nack(false, false)
		g.s.Logger.Warn("rabbit: message rejected (not requeued): holding it failed",
			"queue", g.s.Names.Of(queue), "message_id", d.MessageId, "app_id", d.AppId, "reason", reason, "err", err.Error())
		return
	}
	g.s.Logger.Warn("rabbit: message moved to the hold queue; it is not a task of this run",
		"queue", g.s.Names.Of(queue), "message_id", d.MessageId, "app_id", d.AppId, "reason", reason, "hold", g.s.Names.hold())
}

// copyToHold publishes a copy of d to the hold queue, declaring the
// queue first if this is the run's first foreign message.
func (g *Guest) copyToHold(ctx context.Context, d amqp.Delivery, reason string) error {
	pub, err := g.holdPublisher(ctx)
	if err != nil {
		return err
	}
	msg := Copy(d)
	if msg.Headers == nil {
		msg.Headers = amqp.Table{}
	}
	msg.Headers[ForeignReasonHeader] = reason
	msg.UserId = "" // the broker refuses (406) a user-id other than the connection's
	return pub.deliver(ctx, route{key: g.s.Names.hold()}, msg)
}

// holdPublisher declares the hold queue (recorded for Close, which keeps
// it while it holds anything) and opens its publisher, once.
func (g *Guest) holdPublisher(ctx context.Context) (*Publisher, error) {
	g.screen.pubMu.Lock()
	defer g.screen.pubMu.Unlock()
	g.screen.mu.Lock()
	pub := g.screen.pub
	g.screen.mu.Unlock()
	if pub != nil {
		return pub, nil
	}
	name := g.s.Names.hold()
	err := g.s.topo.queueDeclare(ctx, name, nil)
	if mayExist(err) { // as declare: Close deletes it, even if the publisher below fails
		g.s.topo.own(name)
	}
	if err != nil {
		return nil, fmt.Errorf("declaring the hold queue %s: %w", name, err)
	}
	pub, err = g.s.Publisher(ctx)
	if err != nil {
		return nil, err
	}
	g.screen.mu.Lock()
	g.screen.pub = pub
	g.screen.mu.Unlock()
	return pub, nil
}

// keepHold reports whether the hold queue holds messages, and if so logs
// where they are and how to remove them once inspected.
func (g *Guest) keepHold(ctx context.Context, conn *amqp.Connection) bool {
	q, _ := inspectOn(ctx, conn, g.s.Names.hold())
	n := q.Messages
	if n == 0 {
		return false
	}
	g.s.Logger.Warn("rabbit: kept the hold queue: it holds messages this run did not publish",
		"queue", g.s.Names.hold(), "messages", n, "remove_with", "rabbitmqctl delete_queue "+g.s.Names.hold())
	return true
}

// holdLeftovers sifts every queue the session declared that still holds
// messages (Sift), so that a message someone else put there (one waiting
// out a wait queue's TTL, say) is moved to the hold queue with a reason
// before Close deletes the queue, never deleted with it unseen. The run's
// own messages stay, for the deletion to discard (ReportDiscarded says
// so). Trouble is logged: the clean-up goes on.
func (g *Guest) holdLeftovers(ctx context.Context) {
	g.s.topo.owned.mu.Lock()
	owned := slices.Clone(g.s.topo.owned.declared)
	g.s.topo.owned.mu.Unlock()
	for _, name := range owned {
		if name == g.s.Names.hold() {
			continue
		}
		if q, err := g.s.link.inspect(ctx, name); err != nil || q.Messages == 0 {
			continue
		}
		// No wait for what it hands back: the queue is deleted next, and
		// a wait queue's messages may expire meanwhile, which would hold
		// the clean-up the whole bound of awaitBack.
		if _, _, err := g.scan(ctx, g.s.Names.Seed(name), peekScan, true, false); err != nil {
			g.s.Logger.Warn("rabbit: could not look for foreign messages before deleting a queue", "queue", name, "err", err.Error())
		}
	}
}
