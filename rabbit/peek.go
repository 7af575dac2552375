package rabbit

import (
	"context"
)

// peekScan bounds how many messages one Peek or Sift reads, foreign ones
// included: a queue flooded from outside must not make it read for ever.
const peekScan = 10_000

// Peek reads up to max messages from the head of seed queue with
// basic.get and leaves them where they are: it never acknowledges them, and
// closing its channel hands them back to the queue in their order; it
// returns once the queue shows them again (awaitBack, at most 2 s). It is
// how a person (or a test) inspects a DLQ without draining it. The
// returned deliveries must not be settled.
//
// Only the run's tasks count: a message someone else published there
// (its AppId is not the run's) or one that is no well-formed task
// (TaskProblem) is skipped and left in place, so a table of what the DLQ
// holds never shows it (Sift holds them instead). At most peekScan
// messages are read in all.
func (g *Guest) Peek(ctx context.Context, queue string, max int) ([]Delivery, error) {
	out, _, err := g.scan(ctx, queue, max, false, true)
	return out, err
}
