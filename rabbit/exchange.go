package rabbit

import (
	"context"
	"fmt"

	"github.com/queuelab/qlab/flow"
)

// declareRoutes declares t's exchanges (durable, under the session's
// names) and binds t's queues to them; the queues must exist already. It
// returns the broker names of the exchanges it declared, for deletion.
func (s *Session) declareRoutes(ctx context.Context, t flow.Topology) ([]string, error) {
	var declared []string
	err := within(ctx, func() error {
		ch, err := s.channel(ctx)
		if err != nil {
			return err
		}
		defer ch.Close()
		for _, x := range t.Exchanges {
			name := s.Names.Of(x.Name)
			err := ch.ExchangeDeclare(name, string(x.Kind),
				true,  // durable: survives a broker restart, as the queues do
				false, // autoDelete: no, the run deletes what it declared
				false, // internal: no, publishers may use it
				false, // noWait: wait for the broker's answer
				nil)
			if err != nil {
				return fmt.Errorf("declaring exchange %s: %w", name, err)
			}
			declared = append(declared, name)
		}
		for _, b := range t.Bindings {
			if err := ch.QueueBind(s.Names.Of(b.Queue), b.Key, s.Names.Of(b.Exchange), false, nil); err != nil {
				return fmt.Errorf("binding %s to %s with key %q: %w", s.Names.Of(b.Queue), s.Names.Of(b.Exchange), b.Key, err)
			}
		}
		return nil
	})
	return declared, err
}

// deleteExchanges deletes the named broker exchanges (and so their
// bindings).
func (s *Session) deleteExchanges(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	return within(ctx, func() error {
		ch, err := s.channel(ctx)
		if err != nil {
			return err
		}
		defer ch.Close()
		for _, name := range names {
			if err := ch.ExchangeDelete(name, false, false); err != nil {
				return fmt.Errorf("deleting exchange %s: %w", name, err)
			}
		}
		return nil
	})
}
