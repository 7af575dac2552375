package q18

import (
	"context"
	"sync"
	"time"

	"github.com/queuelab/qlab/lab"
)

// gate makes part (d)'s race certain. The seed's worker runs up to five
// handlers at once (QUEUE_CONCURRENCY), so two copies of a row can be
// between the idempotency check and the send at the same moment; at the
// lesson's 600× a send is 3 ms real and the copies seldom overlap (three
// broker runs sent 0, 0 and 1 of 5 rows twice with check-then-act). The
// gate holds a handler just after its check until every copy of the row
// has been checked, or gateBound passes: the window the race needs, held
// open, so the two claims meet it every run. The atomic claim is one
// statement and the window cannot split it: one copy wins, the other is
// absorbed; check-then-act's two reads both see "not SENT", and both
// copies are sent.
type gate struct {
	copies int // copies of each row the scheduler publishes
	clock  lab.Clock

	mu      sync.Mutex
	checked map[string]int           // row → copies past their check
	open    map[string]chan struct{} // row → closed when all its copies are
}

// gateBound is the longest a handler waits at the gate (lesson time): if
// the broker hands both copies to one worker (its handler takes one at a
// time), the second cannot come while the first waits, and the first
// goes on alone. A real-time floor keeps a loaded machine's publish
// latency at 600× from ending the wait early.
const gateBound = time.Minute

// gateFloor is the least real time a handler waits at the gate.
const gateFloor = 3 * time.Second

func newGate(copies int, clock lab.Clock) *gate {
	return &gate{copies: copies, clock: clock, checked: map[string]int{}, open: map[string]chan struct{}{}}
}

// pass records one copy of row id past its check and waits until every
// copy is, gateBound passes, or ctx ends.
func (g *gate) pass(ctx context.Context, id string) {
	g.mu.Lock()
	ch, ok := g.open[id]
	if !ok {
		ch = make(chan struct{})
		g.open[id] = ch
	}
	g.checked[id]++
	if g.checked[id] == g.copies {
		close(ch)
	}
	g.mu.Unlock()
	bound := max(g.clock.Real(gateBound), gateFloor)
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}
