package rabbit

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
)

// declareRoutes declares t's exchanges (durable, under the session's
// names) and binds t's queues to them; the queues must exist already. A
// broker that does not answer in time is tried again as Retry says (both
// steps are idempotent). It returns the broker names of the exchanges it
// declared, for deletion, also when a later step failed; when the broker
// never answered, every exchange of t: a declare abandoned at its bound
// may still be carried out, and deleting one that is not there is no
// error (300 runs at once left 109 exchanges behind before).
func (tp *Topo) declareRoutes(ctx context.Context, t flow.Topology) ([]string, error) {
	var r routesDeclared
	err := tp.s.OnConnection(ctx, "declaring the exchanges", func(conn *amqp.Connection) (err error) {
		r, err = tp.declareRoutesOn(ctx, conn, t)
		return err
	})
	if err != nil {
		var all []string
		for _, x := range t.Exchanges {
			all = append(all, tp.s.Names.Of(x.Name))
		}
		return all, err
	}
	return r.declared, r.err
}

// routesDeclared is what declareRoutesOn did: the exchanges it declared
// and the error that stopped it, if the broker refused a step.
type routesDeclared struct {
	declared []string
	err      error
}

// declareRoutesOn is one try of declareRoutes on conn, bounded as
// withinValue says.
func (tp *Topo) declareRoutesOn(ctx context.Context, conn *amqp.Connection, t flow.Topology) (routesDeclared, error) {
	type result = routesDeclared
	// The result comes back through withinValue: a call abandoned at its
	// bound must not write what this function returns.
	return withinValue(ctx, func() (result, error) {
		ch, err := conn.Channel()
		if err != nil {
			return result{}, err
		}
		defer ch.Close()
		var r result
		for _, x := range t.Exchanges {
			name := tp.s.Names.Of(x.Name)
			err := ch.ExchangeDeclare(name, string(x.Kind),
				true,  // durable: survives a broker restart, as the queues do
				false, // autoDelete: no, the run deletes what it declared
				false, // internal: no, publishers may use it
				false, // noWait: wait for the broker's answer
				nil)
			if err != nil {
				r.err = fmt.Errorf("declaring exchange %s: %w", name, err)
				return r, nil
			}
			r.declared = append(r.declared, name)
		}
		for _, b := range t.Bindings {
			if err := ch.QueueBind(tp.s.Names.Of(b.Queue), b.Key, tp.s.Names.Of(b.Exchange), false, nil); err != nil {
				r.err = fmt.Errorf("binding %s to %s with key %q: %w", tp.s.Names.Of(b.Queue), tp.s.Names.Of(b.Exchange), b.Key, err)
				return r, nil
			}
		}
		return r, nil
	})
}

// deleteExchanges deletes the named broker exchanges (and so their
// bindings), waiting for a broker that is restarting as Retry says. The
// error names every exchange left behind.
func (tp *Topo) deleteExchanges(ctx context.Context, names []string) error {
	var left []string
	var first error
	for _, name := range names {
		err := tp.s.OnConnection(ctx, "deleting exchange "+name, func(conn *amqp.Connection) error {
			return onChannel(ctx, conn, func(ch *amqp.Channel) error { return ch.ExchangeDelete(name, false, false) })
		})
		if err != nil && !isNotFound(err) {
			left, first = append(left, name), cmp.Or(first, err)
		}
	}
	if len(left) > 0 {
		tp.leave(nil, left)
		return fmt.Errorf("the clean-up left the run's exchanges %s behind: %w", strings.Join(left, ", "), first)
	}
	return nil
}
