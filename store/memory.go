package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Memory is the Store on Go maps under one mutex: the same contract as the
// SQL stores, and everything in it dies with the process. The mutex is what
// makes Claim atomic here; a database does it with one UPDATE.
type Memory struct {
	mu     sync.Mutex
	rows   map[string]Row
	outbox []memEntry
	users  map[string]User // by id
	emails map[string]bool
	now    func() time.Time
}

type memEntry struct {
	OutboxEntry
	relayed bool
}

// NewMemory returns an empty in-memory Store.
func NewMemory() *Memory {
	return &Memory{
		rows:   map[string]Row{},
		users:  map[string]User{},
		emails: map[string]bool{},
		now:    time.Now,
	}
}

// Insert implements Statuses.
func (m *Memory) Insert(ctx context.Context, r Row) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.rows[r.ID]; ok {
		return false, nil
	}
	if r.Status == "" {
		r.Status = Created
	}
	r.Updated = m.now()
	m.rows[r.ID] = r
	return true, nil
}

// Get implements Statuses.
func (m *Memory) Get(ctx context.Context, id string) (Row, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[id]
	if !ok {
		return Row{}, fmt.Errorf("row %q: %w", id, ErrNotFound)
	}
	return r, nil
}

// QueueDue implements Statuses.
func (m *Memory) QueueDue(ctx context.Context, until time.Time) ([]Row, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.queueDue(until), nil
}

// queueDue marks the due CREATED rows QUEUED; the caller holds mu.
func (m *Memory) queueDue(until time.Time) []Row {
	var due []Row
	now := m.now()
	for id, r := range m.rows {
		if r.Status == Created && !r.Due.After(until) {
			r.Status, r.Updated = Queued, now
			m.rows[id] = r
			due = append(due, r)
		}
	}
	slices.SortFunc(due, byDue)
	return due
}

func byDue(a, b Row) int {
	if c := a.Due.Compare(b.Due); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// Claim implements Statuses.
func (m *Memory) Claim(ctx context.Context, id string) (bool, error) {
	return m.move(id, Queued, Sending, "")
}

// Requeue implements Statuses.
func (m *Memory) Requeue(ctx context.Context, id, reason string) error {
	return m.finish(id, Queued, reason)
}

// MarkSent implements Statuses.
func (m *Memory) MarkSent(ctx context.Context, id string) error {
	return m.finish(id, Sent, "")
}

// MarkFailed implements Statuses.
func (m *Memory) MarkFailed(ctx context.Context, id, reason string) error {
	return m.finish(id, Failed, reason)
}

// finish moves a SENDING row to status `to`, or says why it could not.
func (m *Memory) finish(id string, to Status, reason string) error {
	moved, err := m.move(id, Sending, to, reason)
	if err == nil && !moved {
		err = fmt.Errorf("row %q: %w", id, ErrNotSending)
	}
	return err
}

// move changes the row from `from` to `to` if it is in `from`, reporting
// whether it did; reaching Sending counts an attempt, and a non-empty
// reason becomes LastError.
func (m *Memory) move(id string, from, to Status, reason string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[id]
	if !ok {
		return false, fmt.Errorf("row %q: %w", id, ErrNotFound)
	}
	if r.Status != from {
		return false, nil
	}
	r.Status, r.Updated = to, m.now()
	if to == Sending {
		r.Attempts++
	}
	if reason != "" {
		r.LastError = reason
	}
	m.rows[id] = r
	return true, nil
}

// Counts implements Statuses.
func (m *Memory) Counts(ctx context.Context) (map[Status]int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	counts := zeroCounts()
	for _, r := range m.rows {
		counts[r.Status]++
	}
	return counts, nil
}

// QueueDueToOutbox implements Outbox.
func (m *Memory) QueueDueToOutbox(ctx context.Context, until time.Time) ([]Row, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	due := m.queueDue(until)
	for _, r := range due {
		e := OutboxEntry{Seq: int64(len(m.outbox) + 1), ID: r.ID, Kind: r.Kind, Created: r.Updated}
		m.outbox = append(m.outbox, memEntry{OutboxEntry: e})
	}
	return due, nil
}

// PendingOutbox implements Outbox.
func (m *Memory) PendingOutbox(ctx context.Context, limit int) ([]OutboxEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var pending []OutboxEntry
	for _, e := range m.outbox {
		if len(pending) >= limit {
			break
		}
		if !e.relayed {
			pending = append(pending, e.OutboxEntry)
		}
	}
	return pending, nil
}

// MarkRelayed implements Outbox.
func (m *Memory) MarkRelayed(ctx context.Context, seq int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if seq < 1 || seq > int64(len(m.outbox)) {
		return fmt.Errorf("outbox entry %d: %w", seq, ErrNotFound)
	}
	m.outbox[seq-1].relayed = true
	return nil
}

// InsertUsers implements Users.
func (m *Memory) InsertUsers(ctx context.Context, users []User) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids, emails := map[string]bool{}, map[string]bool{}
	for _, u := range users {
		if m.taken(u) || ids[u.ID] || emails[u.Email] {
			return fmt.Errorf("user %q <%s>: %w", u.ID, u.Email, ErrDuplicate)
		}
		ids[u.ID], emails[u.Email] = true, true
	}
	for _, u := range users {
		m.add(u)
	}
	return nil
}

// InsertUsersSkipping implements Users.
func (m *Memory) InsertUsersSkipping(ctx context.Context, users []User) ([]int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var skipped []int
	for i, u := range users {
		if m.taken(u) {
			skipped = append(skipped, i)
			continue
		}
		m.add(u)
	}
	return skipped, nil
}

func (m *Memory) taken(u User) bool {
	_, idTaken := m.users[u.ID]
	return idTaken || m.emails[u.Email]
}

func (m *Memory) add(u User) {
	m.users[u.ID] = u
	m.emails[u.Email] = true
}

// CountUsers implements Users.
func (m *Memory) CountUsers(ctx context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.users), nil
}

// Close implements Store; the data goes with the Memory.
func (m *Memory) Close() error { return nil }

// zeroCounts returns a count of zero for every Status.
func zeroCounts() map[Status]int {
	counts := make(map[Status]int, len(AllStatuses))
	for _, s := range AllStatuses {
		counts[s] = 0
	}
	return counts
}
