package rabbit

import (
	"context"
	"fmt"
)

// Peek reads up to max messages from the head of seed queue with
// basic.get and leaves them where they are: it never acknowledges them, and
// closing its channel hands them back to the queue in their order. It is
// how a person (or a test) inspects a DLQ without draining it. The
// returned deliveries must not be settled.
func (s *Session) Peek(ctx context.Context, queue string, max int) ([]Delivery, error) {
	out, err := withinValue(ctx, func() ([]Delivery, error) {
		ch, err := s.channel(ctx)
		if err != nil {
			return nil, err
		}
		defer ch.Close() // returns every unacknowledged get to the queue
		var out []Delivery
		for len(out) < max {
			d, ok, err := ch.Get(s.Names.Of(queue), false)
			if err != nil || !ok {
				return out, err
			}
			out = append(out, Delivery{Delivery: d, Task: d.MessageId, Queue: queue, Deaths: ReadDeaths(d.Headers)})
		}
		return out, nil
	})
	if err != nil {
		return nil, fmt.Errorf("peeking at %s: %w", s.Names.Of(queue), err)
	}
	return out, nil
}
