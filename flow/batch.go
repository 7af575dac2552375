package flow

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Batch is how a batch consumer groups its deliveries: up to Size of
// them, or what has arrived Wait after the first, whichever comes first
// (seed 004's batching consumer: 10 messages or 5 s).
type Batch struct {
	Size int           // at most this many deliveries a call; at least 1
	Wait time.Duration // lesson time from a batch's first delivery to its call; > 0
	// Handle decides every delivery of the batch: it returns one Decision
	// per delivery, in order, and each is carried out on its own (one
	// acked, the next retried, a third parked).
	Handle BatchHandler
	// KeepPrefetch leaves the consumer's Prefetch as it is, even below
	// Size: a batch then never holds more than Prefetch deliveries and
	// every batch waits out Wait (lesson Q23 shows it). Unset, the
	// prefetch is raised to Size.
	KeepPrefetch bool
}

// Window is how many deliveries consumer c of batch b may hold unsettled:
// c's prefetch, raised to b.Size unless b.KeepPrefetch.
func (b Batch) Window(c Consumer) int {
	if b.KeepPrefetch {
		return c.Window(1)
	}
	return c.Window(b.Size)
}

// BatchHandler decides a batch of deliveries, one Decision each.
type BatchHandler func(ctx context.Context, ds []*Delivery) []Decision

// Batcher is a backend that can deliver in batches (an optional
// interface): ConsumeBatch starts consumer c, whose Handle is unused,
// calling b.Handle with each batch from one goroutine. c.Prefetch is
// raised to b.Size, so a batch can fill (b.Window).
type Batcher interface {
	ConsumeBatch(ctx context.Context, c Consumer, b Batch) error
}

// ErrBadBatch means a Batch cannot work: no handler, Size below 1 or no
// Wait.
var ErrBadBatch = errors.New("flow: a batch needs a Handle, a Size of at least 1 and a positive Wait")

// Check reports whether b can work.
func (b Batch) Check() error {
	if b.Handle == nil || b.Size < 1 || b.Wait <= 0 {
		return fmt.Errorf("%w (size %d, wait %s)", ErrBadBatch, b.Size, b.Wait)
	}
	return nil
}

// Decide calls b.Handle on ds and returns one decision per delivery: a
// handler that returns too few leaves the rest requeued, so none is left
// unsettled (and the stream shows it), and its extra decisions are
// ignored.
func (b Batch) Decide(ctx context.Context, ds []*Delivery) []Decision {
	decs := b.Handle(ctx, ds)
	out := make([]Decision, len(ds))
	for i := range out {
		out[i] = Requeue()
		if i < len(decs) {
			out[i] = decs[i]
		}
	}
	return out
}

// Gather reads items from in and calls flush with each batch: up to size
// items, or those that came within wait (real time) of the batch's first,
// whichever is first. It returns when in closes (flushing what it holds)
// or ctx ends (dropping it: the caller's stop settles nothing, and the
// broker or the caller's crash report has those). Both backends run their
// batch consumers on it.
func Gather[T any](ctx context.Context, in <-chan T, size int, wait time.Duration, flush func([]T)) {
	for {
		var batch []T
		select {
		case <-ctx.Done():
			return
		case item, ok := <-in:
			if !ok {
				return
			}
			batch = append(batch, item)
		}
		timer := time.NewTimer(wait)
		open := true
		for open && len(batch) < size {
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case item, ok := <-in:
				if !ok {
					open = false
					break
				}
				batch = append(batch, item)
			case <-timer.C:
				open = false
			}
		}
		timer.Stop()
		flush(batch)
	}
}
