package rabbit

import (
	"context"
	"fmt"
)

// peekScan bounds how many messages one Peek reads, foreign ones
// included: a queue flooded from outside must not make it read for ever.
const peekScan = 10_000

// Peek reads up to max messages from the head of seed queue with
// basic.get and leaves them where they are: it never acknowledges them, and
// closing its channel hands them back to the queue in their order. It is
// how a person (or a test) inspects a DLQ without draining it. The
// returned deliveries must not be settled.
//
// Only the run's tasks count: a message someone else published there
// (its AppId is not the run's) or one that is no well-formed task
// (TaskProblem) is skipped and left in place, so a table of what the DLQ
// holds never shows it. At most peekScan messages are read in all.
func (s *Session) Peek(ctx context.Context, queue string, max int) ([]Delivery, error) {
	out, err := withinValue(ctx, func() ([]Delivery, error) {
		ch, err := s.channel(ctx)
		if err != nil {
			return nil, err
		}
		defer ch.Close() // returns every unacknowledged get to the queue
		var out []Delivery
		for read := 0; len(out) < max && read < peekScan; read++ {
			d, ok, err := ch.Get(s.Names.Of(queue), false)
			if err != nil || !ok {
				return out, err
			}
			if d.AppId != s.Names.Run || TaskProblem(d) != "" {
				continue
			}
			out = append(out, Delivery{Delivery: d, Task: d.MessageId, Queue: queue, Deaths: ReadDeaths(d.Headers), names: s.Names})
		}
		return out, nil
	})
	if err != nil {
		return nil, fmt.Errorf("peeking at %s: %w", s.Names.Of(queue), err)
	}
	return out, nil
}
