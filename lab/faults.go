package lab

import (
	"context"
	"sync"
	"time"
)

// Faults is the switchboard behind the TUI's fault keys: a backend
// registers each connection a run opens (AddConn) and each channel while
// it holds a delivery its worker has not settled (AddHolder); the front
// end breaks them at the student's key. Only what the run itself
// registered is ever touched: the switchboard travels in the run's
// context (WithFaults), so another run, or another program on the same
// broker, is out of its reach. A nil *Faults registers and breaks nothing.
// Safe for concurrent use.
type Faults struct {
	mu      sync.Mutex
	next    int
	conns   map[int]func()
	holders map[int]holder
	added   chan struct{} // closed and replaced when a holder is added
}

// holder is a channel holding a delivery: what it is, for the student,
// and how to close it.
type holder struct {
	what string
	shut func()
}

// AddConn registers cut, which cuts one connection of the run; the
// returned remove unregisters it (call it when the connection closes).
func (f *Faults) AddConn(cut func()) (remove func()) {
	if f == nil {
		return func() {}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		f.conns = map[int]func(){}
	}
	id := f.next
	f.next++
	f.conns[id] = cut
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.conns, id)
	}
}

// AddHolder registers shut, which closes a channel while it holds an
// unsettled delivery; what names it for the student ("Worker's channel,
// holding task C"). The returned remove unregisters it (call it once
// the delivery is settled).
func (f *Faults) AddHolder(what string, shut func()) (remove func()) {
	if f == nil {
		return func() {}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.holders == nil {
		f.holders = map[int]holder{}
	}
	id := f.next
	f.next++
	f.holders[id] = holder{what: what, shut: shut}
	if f.added != nil { // a CloseHolding waits for one
		close(f.added)
		f.added = nil
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.holders, id)
	}
}

// Holding is how many channels hold a delivery now.
func (f *Faults) Holding() int {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.holders)
}

// CutConnections cuts every connection the run has open and reports how
// many it cut.
func (f *Faults) CutConnections() int {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	cuts := make([]func(), 0, len(f.conns))
	for id, cut := range f.conns {
		cuts = append(cuts, cut)
		delete(f.conns, id)
	}
	f.mu.Unlock()
	for _, cut := range cuts {
		cut()
	}
	return len(cuts)
}

// CloseHolding closes the channel that has held a delivery the longest,
// waiting up to wait (or ctx) for one, since a worker holds a delivery
// only while it works on it. It reports what it closed, and false when
// no channel held a delivery in time.
func (f *Faults) CloseHolding(ctx context.Context, wait time.Duration) (what string, ok bool) {
	if f == nil {
		return "", false
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		f.mu.Lock()
		oldest := -1
		for id := range f.holders {
			if oldest < 0 || id < oldest {
				oldest = id
			}
		}
		if oldest >= 0 {
			h := f.holders[oldest]
			delete(f.holders, oldest)
			f.mu.Unlock()
			h.shut()
			return h.what, true
		}
		if f.added == nil {
			f.added = make(chan struct{})
		}
		added := f.added
		f.mu.Unlock()
		select {
		case <-added:
		case <-timer.C:
			return "", false
		case <-ctx.Done():
			return "", false
		}
	}
}

type faultsKey struct{}

// WithFaults returns ctx carrying f: a backend registers what the run
// opens under ctx with FaultsFrom(ctx).
func WithFaults(ctx context.Context, f *Faults) context.Context {
	return context.WithValue(ctx, faultsKey{}, f)
}

// FaultsFrom is the switchboard ctx carries, or nil.
func FaultsFrom(ctx context.Context) *Faults {
	f, _ := ctx.Value(faultsKey{}).(*Faults)
	return f
}
