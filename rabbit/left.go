package rabbit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"
)

// What a session's clean-up could not delete. Close deletes the run's
// queues and exchanges, retrying while its bound allows; what is still
// there then is the run's, left behind: the session remembers it (in
// owned.left and owned.leftExchanges), a later part of the same run or
// the run's end tries again (TidyLeft), and the run's final error names
// whatever stays (LeftError) with the command that removes it.

// LeftError names what a run left on the broker and how to remove it.
type LeftError struct {
	Names     Names
	Queues    []CleanedQueue // Messages -1 when the broker did not say
	Exchanges []string
	Err       error // why the last try failed
}

// Error is one line: each queue with its messages, each exchange, and the
// command that removes them.
func (e *LeftError) Error() string {
	var what []string
	for _, q := range e.Queues {
		held := "messages unknown"
		if q.Messages >= 0 {
			held = fmt.Sprintf("%d messages", q.Messages)
		}
		what = append(what, fmt.Sprintf("queue %s (%s)", q.Name, held))
	}
	for _, x := range e.Exchanges {
		what = append(what, "exchange "+x)
	}
	msg := "the run left on the broker " + strings.Join(what, ", ") + "; remove them with: " + e.Command()
	if e.Err != nil {
		msg += " (the clean-up's last try: " + e.Err.Error() + ")"
	}
	return msg
}

// Unwrap is why the last try failed.
func (e *LeftError) Unwrap() error { return e.Err }

// Command removes what the run left: qlab broker clean under a prefix,
// else (the seed's exact names) one rabbitmqctl per queue and the
// management tool's command per exchange.
func (e *LeftError) Command() string {
	if p := e.Names.bare(); p != "" {
		return "qlab broker clean --prefix " + p
	}
	var cmds []string
	for _, q := range e.Queues {
		cmds = append(cmds, "rabbitmqctl delete_queue "+q.Name)
	}
	for _, x := range e.Exchanges {
		cmds = append(cmds, "rabbitmqadmin delete exchange name="+x)
	}
	return strings.Join(cmds, "; ")
}

// leave records queues and exchanges the clean-up could not delete.
func (tp *Topo) leave(queues, exchanges []string) {
	tp.owned.mu.Lock()
	defer tp.owned.mu.Unlock()
	tp.owned.left = append(tp.owned.left, queues...)
	tp.owned.leftExchanges = append(tp.owned.leftExchanges, exchanges...)
}

// Left lists what the session's clean-up could not delete so far.
func (tp *Topo) Left() (queues, exchanges []string) {
	tp.owned.mu.Lock()
	defer tp.owned.mu.Unlock()
	return slices.Clone(tp.owned.left), slices.Clone(tp.owned.leftExchanges)
}

// TidyLeft tries again, within ctx, to delete what the session's clean-up
// left (Left), on a connection of its own (the session's is closed),
// waiting for a broker that is away as long as ctx allows. It returns a
// *LeftError naming what is still there, with each queue's messages, or
// nil when nothing is. What it deletes is forgotten.
func (tp *Topo) TidyLeft(ctx context.Context) error {
	queues, exchanges := tp.Left()
	if len(queues) == 0 && len(exchanges) == 0 {
		return nil
	}
	ctx = cleaning(ctx)
	left := &LeftError{Names: tp.s.Names}
	var conn *amqp.Connection
	left.Err = tp.s.Retry(ctx, "dialling the broker to clean up", func() (err error) {
		conn, err = dialAs(ctx, tp.s.URL, ConnectionName(tp.s.Names), nil)
		return err
	})
	if left.Err != nil {
		for _, q := range queues {
			left.Queues = append(left.Queues, CleanedQueue{Name: q, Messages: -1})
		}
		left.Exchanges = exchanges
		return left
	}
	defer closeWithin(conn)
	for _, name := range queues {
		if name == tp.s.Names.hold() && tp.s.guest.keepHold(ctx, conn) {
			continue // foreign messages: never the run's to delete
		}
		if q, err := tidyQueue(ctx, conn, name); err != nil {
			left.Queues, left.Err = append(left.Queues, q), err
		}
	}
	for _, name := range exchanges {
		err := onChannel(ctx, conn, func(ch *amqp.Channel) error { return ch.ExchangeDelete(name, false, false) })
		if err != nil && !isNotFound(err) {
			left.Exchanges, left.Err = append(left.Exchanges, name), err
		}
	}
	tp.owned.mu.Lock()
	tp.owned.left = names(left.Queues)
	tp.owned.leftExchanges = left.Exchanges
	tp.owned.mu.Unlock()
	if len(left.Queues) == 0 && len(left.Exchanges) == 0 {
		return nil
	}
	return left
}

// tidyQueue deletes broker queue name on conn (one already gone counts as
// deleted); on failure it returns the queue with the messages it held.
func tidyQueue(ctx context.Context, conn *amqp.Connection, name string) (CleanedQueue, error) {
	found := CleanedQueue{Name: name, Messages: -1}
	q, err := inspectOn(ctx, conn, name)
	if isNotFound(err) {
		return found, nil
	}
	if err == nil {
		found.Messages, found.Consumers = q.Messages, q.Consumers
	}
	err = onChannel(ctx, conn, func(ch *amqp.Channel) error {
		_, err := ch.QueueDelete(name, false, false, false) // ifUnused, ifEmpty, noWait: no
		return err
	})
	if err != nil && !isNotFound(err) {
		return found, err
	}
	return found, nil
}

// names are the broker names of qs.
func names(qs []CleanedQueue) []string {
	var out []string
	for _, q := range qs {
		out = append(out, q.Name)
	}
	return out
}
