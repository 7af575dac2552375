package rabbit

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The claim part of a Session: a run under names it does not own alone
// (the seed's exact names, or a person's --prefix) claims them before it
// declares anything, so two runs under the same names can never both
// pass Declare's "already exists" check and then use, park or delete each
// other's messages. The claim is an exclusive queue, Names.claim(),
// declared on the session's own connection: RabbitMQ lets one connection
// at a time hold an exclusive queue and deletes it when that connection
// closes (the run ends, or dies), so a killed run leaves no claim behind.
// When the session's connection is replaced (live), the claim is taken
// again on the new one; if another run took it meanwhile, the run fails.
// Lock: link.mu guards link.claimed, as it guards the connection the
// claim lives on.

// ClaimedError means another run holds the claim on the names: it is
// still going (or its connection is), so this run does not start.
type ClaimedError struct {
	Prefix string // the names' prefix ("" for the seed's exact names)
	Queue  string // the claim's queue
}

// Error says who holds the names and what to do, on one line.
func (e *ClaimedError) Error() string {
	under := "the seed's exact names"
	if e.Prefix != "" {
		under = "the names under prefix " + e.Prefix
	}
	return fmt.Sprintf("another run is using %s (it holds the exclusive queue %s): "+
		"this run does not start; wait for that run to end, or pick another --prefix", under, e.Queue)
}

// claimName is the claim queue of names, or "" when the names are the
// run's own (a RunNames prefix is the run id: no other run can use it).
func claimName(n Names) string {
	if n.Run != "" && n.Prefix == n.Run+"." {
		return ""
	}
	return n.Prefix + "qlab.claim"
}

// claim takes the session's claim on its names, once; a second call is a
// no-op. A *ClaimedError means another run holds it.
func (g *Guest) claim(ctx context.Context) error {
	name := claimName(g.s.Names)
	if name == "" {
		return nil
	}
	g.s.link.mu.Lock()
	claimed := g.s.link.claimed
	g.s.link.mu.Unlock()
	if claimed {
		return nil
	}
	conn, err := g.s.link.live(ctx)
	if err != nil {
		return err
	}
	g.s.link.mu.Lock()
	defer g.s.link.mu.Unlock()
	if err := claimOn(ctx, conn, g.s.Names); err != nil {
		return err
	}
	g.s.link.claimed = true
	return nil
}

// claimOn declares names' claim queue, exclusive, on conn.
func claimOn(ctx context.Context, conn *amqp.Connection, names Names) error {
	name := claimName(names)
	err := onChannel(ctx, conn, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(name,
			false, // durable: no, it lives as long as the connection
			true,  // autoDelete
			true,  // exclusive: one connection at a time; gone when it closes
			false, nil)
		return err
	})
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) && amqpErr.Code == amqp.ResourceLocked {
		return &ClaimedError{Prefix: names.Prefix, Queue: name}
	}
	if err != nil {
		return fmt.Errorf("claiming the run's names (%s): %w", name, err)
	}
	return nil
}

// claimHeld reports whether someone holds names' claim: a passive declare
// of an exclusive queue another connection holds is refused (405).
func claimHeld(ctx context.Context, conn *amqp.Connection, names Names) (bool, error) {
	name := claimName(names)
	if name == "" {
		return false, nil
	}
	_, err := inspectOn(ctx, conn, name)
	var amqpErr *amqp.Error
	switch {
	case err == nil, isNotFound(err):
		return false, nil
	case errors.As(err, &amqpErr) && amqpErr.Code == amqp.ResourceLocked:
		return true, nil
	}
	return false, err
}

// reclaimWithin bounds how long reclaim waits for the broker to drop the
// claim of a connection that just closed: it deletes an exclusive queue
// once it has noticed the close, a moment after the client has.
const reclaimWithin = 3 * time.Second

// reclaim takes names' claim on conn after the session's connection was
// replaced, waiting while the old connection's claim is still there
// (PollUntil); a claim still held after reclaimWithin is another run's.
func reclaim(ctx context.Context, conn *amqp.Connection, names Names) error {
	var err error
	if _, perr := PollUntil(ctx, 50*time.Millisecond, reclaimWithin, func() (bool, error) {
		err = claimOn(ctx, conn, names)
		var claimed *ClaimedError
		if errors.As(err, &claimed) {
			return false, nil // perhaps our own old one, not yet dropped
		}
		return true, nil
	}); perr != nil {
		return perr
	}
	return err
}
