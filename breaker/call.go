package breaker

import (
	"context"
	"fmt"
	"sync"
)

// outcome is how one admitted call ended.
type outcome struct {
	err      error
	timedOut bool
	panicked bool
	value    any // the panic value
}

// timeouts is 1 for a timed-out call, for Counts.Timeouts.
func (o outcome) timeouts() int {
	if o.timedOut {
		return 1
	}
	return 0
}

// call runs fn under the per-call timeout. The deadline is a timer on the
// breaker's clock, as opossum's is a setTimeout (circuit.js:733): when it
// fires first, call returns ErrTimeout at once and fn, on its own
// goroutine, sees its context cancelled.
func (b *Breaker) call(ctx context.Context, fn func(context.Context) error) outcome {
	if b.s.Timeout < 0 {
		return guarded(ctx, fn)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	expired := make(chan struct{})
	t := b.s.Clock.AfterFunc(b.s.Timeout, func() { cancel(ErrTimeout); close(expired) })
	defer t.Stop()
	h := &handoff{done: make(chan outcome, 1)}
	go h.run(cctx, fn)
	timedOut := outcome{err: fmt.Errorf("%w after %s", ErrTimeout, b.s.Timeout), timedOut: true}
	select {
	case out := <-h.done:
		if out.err != nil && !out.panicked && context.Cause(cctx) == ErrTimeout {
			return timedOut // it gave up because the deadline cancelled it
		}
		return out
	case <-expired:
		if out, ok := h.abandon(); ok && (out.err == nil || out.panicked) {
			return out // it finished at the very deadline
		}
		return timedOut
	}
}

// handoff passes fn's outcome from its goroutine to the caller, unless the
// caller has left at the deadline: then the outcome is dropped, as opossum
// drops a late result (circuit.js:764,787), and a late panic is re-raised
// where it happened.
type handoff struct {
	mu        sync.Mutex
	done      chan outcome // buffered: the send never blocks
	abandoned bool
}

func (h *handoff) run(ctx context.Context, fn func(context.Context) error) {
	out := guarded(ctx, fn)
	h.mu.Lock()
	late := h.abandoned
	if !late {
		h.done <- out
	}
	h.mu.Unlock()
	if late && out.panicked {
		panic(out.value)
	}
}

// abandon tells the goroutine nobody waits any more, unless its outcome
// is already there (then it returns it, true).
func (h *handoff) abandon() (outcome, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case out := <-h.done:
		return out, true
	default:
		h.abandoned = true
		return outcome{}, false
	}
}

// guarded calls fn and turns a panic into an outcome that carries it.
func guarded(ctx context.Context, fn func(context.Context) error) (out outcome) {
	defer func() {
		if r := recover(); r != nil {
			out = outcome{err: fmt.Errorf("circuit breaker: call panicked: %v", r), panicked: true, value: r}
		}
	}()
	return outcome{err: fn(ctx)}
}
