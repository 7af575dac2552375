package q18

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
)

// worker is how a worker makes a delivery its own (the idempotency check)
// and records the send.
type worker struct {
	name string
	// claim reports whether this delivery should send row id; false means
	// another copy has it.
	claim func(ctx context.Context, v *variant, id string) (bool, error)
	// done records the send.
	done func(ctx context.Context, db store.Store, id string) error
}

// atomicClaim is the claim as one statement: UPDATE … SET status='SENDING'
// WHERE id=? AND status='QUEUED'. Of two copies handled at once, exactly
// one wins.
var atomicClaim = worker{
	name: "atomic claim",
	claim: func(ctx context.Context, v *variant, id string) (bool, error) {
		return v.db.Claim(ctx, id)
	},
	done: func(ctx context.Context, db store.Store, id string) error { return db.MarkSent(ctx, id) },
}

// checkThenAct is the seed's worker: fetch the row, skip it if it is
// already SENT, else send it and then update the status. Two copies
// handled at once both read "not SENT", and both send.
var checkThenAct = worker{
	name: "check-then-act",
	claim: func(ctx context.Context, v *variant, id string) (bool, error) {
		r, err := v.db.Get(ctx, id)
		return err == nil && r.Status != store.Sent, err
	},
	done: func(ctx context.Context, db store.Store, id string) error {
		if _, err := db.Claim(ctx, id); err != nil { // SENDING, unless the other copy got there
			return err
		}
		if err := db.MarkSent(ctx, id); err != nil && !errors.Is(err, store.ErrNotSending) {
			return err
		}
		return nil
	},
}

// claimWhenQueued is the atomic claim for a scheduler that publishes
// first and marks the row QUEUED after: a delivery can beat the mark, so
// the worker waits (holding its prefetch slot) while the row is CREATED,
// checking every queuedPoll, for at most queuedWait.
var claimWhenQueued = worker{
	name: "atomic claim, waits for QUEUED",
	claim: func(ctx context.Context, v *variant, id string) (bool, error) {
		for waited := time.Duration(0); ; waited += queuedPoll {
			if won, err := v.db.Claim(ctx, id); won || err != nil {
				return won, err
			}
			r, err := v.db.Get(ctx, id)
			if err != nil || r.Status != store.Created {
				return false, err
			}
			if waited >= queuedWait {
				return false, fmt.Errorf("row %s still CREATED after %s", id, queuedWait)
			}
			if err := v.clock.Wait(ctx, queuedPoll); err != nil {
				return false, err
			}
		}
	},
	done: atomicClaim.done,
}

// How a worker waits for the scheduler's QUEUED mark (lesson time): a
// cron that failed a tick marks it at the next, a minute later. The poll
// does not divide the minute, so no check lands on the very instant of a
// tick (a race whose winner would change the transcript). The bound is
// ten ticks, not the one or two the lesson needs: at 600x a tick is
// 100 ms real, and a tick's publishes and store reads on a busy machine
// (PostgreSQL, two busy cores) took longer than the 300 ms that 3 ticks
// gave, so a copy was parked with its row about to be marked.
const (
	queuedPoll = 7 * time.Second
	queuedWait = 10 * birthday.Tick
)
