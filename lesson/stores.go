package lesson

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/queuelab/qlab/store"
)

// finalReadBound bounds the last read of a store that is closing: a
// database that went away must not hold up the run's end.
const finalReadBound = 2 * time.Second

// StoreReader is what a viewer reads of a run's status store: a
// store.Store is one.
type StoreReader interface {
	Counts(ctx context.Context) (map[store.Status]int, error)
	CountUsers(ctx context.Context) (int, error)
}

// StoreState is one status store of a run as last read: its rows by
// status and how many users its users table holds.
type StoreState struct {
	Name   string               // the part's name for it (lessons/runstore), e.g. "early"
	Kind   string               // "a map", "SQLite", "PostgreSQL"
	Counts map[store.Status]int // every store.Status present; nil before a first read
	Users  int
	Closed bool // the part ended: these are its final counts
}

// Stores is where a run's lessons register the status stores they open
// (Options.Stores) and a viewer reads their counts while the run goes:
// the TUI's store panel. The zero value is ready; safe for concurrent use.
type Stores struct {
	mu      sync.Mutex
	entries []*storeEntry
}

type storeEntry struct {
	state StoreState
	r     StoreReader // nil once closed
}

// Add registers r under name; call the returned close before the store
// is closed or dropped: it reads the counts one last time and keeps them.
// A nil Stores registers nothing.
func (s *Stores) Add(name, kind string, r StoreReader) (close func(ctx context.Context)) {
	if s == nil {
		return func(context.Context) {}
	}
	e := &storeEntry{state: StoreState{Name: name, Kind: kind}, r: r}
	s.mu.Lock()
	s.entries = append(s.entries, e)
	s.mu.Unlock()
	return func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, finalReadBound)
		defer cancel()
		s.read(ctx, e)
		s.mu.Lock()
		defer s.mu.Unlock()
		e.state.Closed, e.r = true, nil
	}
}

// Read reads every open store's counts (a store that fails to answer
// keeps its last ones) and returns every store's state, in the order they
// were added.
func (s *Stores) Read(ctx context.Context) []StoreState {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	entries := slices.Clone(s.entries)
	s.mu.Unlock()
	states := make([]StoreState, len(entries))
	for i, e := range entries {
		s.read(ctx, e)
		s.mu.Lock()
		states[i] = e.state
		s.mu.Unlock()
	}
	return states
}

// read updates e's counts from its store, unless it is closed or fails.
func (s *Stores) read(ctx context.Context, e *storeEntry) {
	s.mu.Lock()
	r := e.r
	s.mu.Unlock()
	if r == nil {
		return
	}
	counts, err := r.Counts(ctx)
	if err != nil {
		return
	}
	users, err := r.CountUsers(ctx)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.r != nil {
		e.state.Counts, e.state.Users = counts, users
	}
}
