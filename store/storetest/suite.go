// Package storetest is the contract every store.Store keeps, as one suite
// each implementation runs (watermill's pubsub/tests, for the store): the
// map, SQLite and PostgreSQL alike. Run it under -race: the claim race is
// the case the lessons stand on.
package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/store"
)

// Racers is how many goroutines CheckClaimRace sets on one row.
const Racers = 16

// Run runs every contract case, each on a fresh, empty store from open
// (which registers its own clean-up with t).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	cases := []struct {
		name string
		f    func(*testing.T, store.Store)
	}{
		{"InsertIfAbsent", insertIfAbsent},
		{"GetMissing", getMissing},
		{"QueueDue", queueDue},
		{"QueueDueTwiceAtOnce", queueDueTwiceAtOnce},
		{"Claim", claim},
		{"ClaimRace", claimRace},
		{"SendingToSentOrFailed", sendingToSentOrFailed},
		{"Requeue", requeue},
		{"Counts", counts},
		{"Outbox", outbox},
		{"InsertUsersAllOrNothing", insertUsersAllOrNothing},
		{"InsertUsersSkipping", insertUsersSkipping},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.f(t, open(t)) })
	}
}

// base is a due time with no more precision than every store keeps (µs).
var base = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

func at(minutes int) time.Time { return base.Add(time.Duration(minutes) * time.Minute) }

// insert adds rows, each QUEUED or CREATED as given, due at the given minute.
func insert(t *testing.T, s store.Store, status store.Status, minute int, ids ...string) {
	t.Helper()
	for _, id := range ids {
		added, err := s.Insert(t.Context(), store.Row{ID: id, Kind: "birthday", Status: status, Due: at(minute)})
		require.NoError(t, err)
		require.True(t, added, id)
	}
}

func get(t *testing.T, s store.Store, id string) store.Row {
	t.Helper()
	r, err := s.Get(t.Context(), id)
	require.NoError(t, err)
	return r
}

func ids(rows []store.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}

func insertIfAbsent(t *testing.T, s store.Store) {
	ctx := t.Context()
	before := time.Now().Truncate(time.Millisecond)
	added, err := s.Insert(ctx, store.Row{ID: "m1", Kind: "birthday", Due: at(5)})
	require.NoError(t, err)
	assert.True(t, added)

	added, err = s.Insert(ctx, store.Row{ID: "m1", Kind: "anniversary", Status: store.Sent, Due: at(9)})
	require.NoError(t, err)
	assert.False(t, added, "a second insert of the same id must do nothing")

	r := get(t, s, "m1")
	assert.Equal(t, "birthday", r.Kind)
	assert.Equal(t, store.Created, r.Status, "an empty status is stored as CREATED")
	assert.True(t, r.Due.Equal(at(5)), "due %v", r.Due)
	assert.Zero(t, r.Attempts)
	assert.Empty(t, r.LastError)
	assert.False(t, r.Updated.Before(before), "updated %v is before the insert", r.Updated)
}

func getMissing(t *testing.T, s store.Store) {
	_, err := s.Get(t.Context(), "nope")
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func queueDue(t *testing.T, s store.Store) {
	ctx := t.Context()
	insert(t, s, store.Created, 30, "b-half-hour")
	insert(t, s, store.Created, 0, "a-now", "c-now")
	insert(t, s, store.Created, 60, "d-edge")
	insert(t, s, store.Created, 61, "e-later")
	insert(t, s, store.Queued, 1, "f-already-queued")

	due, err := s.QueueDue(ctx, at(60))
	require.NoError(t, err)
	assert.Equal(t, []string{"a-now", "c-now", "b-half-hour", "d-edge"}, ids(due),
		"CREATED rows due up to and including until, by due time then id")
	for _, r := range due {
		assert.Equal(t, store.Queued, r.Status, r.ID)
		assert.Equal(t, store.Queued, get(t, s, r.ID).Status, r.ID)
	}
	assert.Equal(t, store.Created, get(t, s, "e-later").Status)

	again, err := s.QueueDue(ctx, at(60))
	require.NoError(t, err)
	assert.Empty(t, again, "a second run finds nothing left CREATED")
}

// queueDueTwiceAtOnce: two schedulers that fire together queue each row
// once between them.
func queueDueTwiceAtOnce(t *testing.T, s store.Store) {
	var want []string
	for i := range 40 {
		id := fmt.Sprintf("m%02d", i)
		want = append(want, id)
		insert(t, s, store.Created, i%7, id)
	}
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			due, err := s.QueueDue(t.Context(), at(10))
			assert.NoError(t, err)
			mu.Lock()
			got = append(got, ids(due)...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(got)
	assert.Equal(t, want, got, "every row queued exactly once")
}

func claim(t *testing.T, s store.Store) {
	ctx := t.Context()
	insert(t, s, store.Queued, 0, "q")
	insert(t, s, store.Created, 0, "c")

	won, err := s.Claim(ctx, "q")
	require.NoError(t, err)
	assert.True(t, won)
	r := get(t, s, "q")
	assert.Equal(t, store.Sending, r.Status)
	assert.Equal(t, 1, r.Attempts)

	won, err = s.Claim(ctx, "q")
	require.NoError(t, err)
	assert.False(t, won, "a row already SENDING cannot be claimed again")
	assert.Equal(t, 1, get(t, s, "q").Attempts, "a lost claim counts no attempt")

	won, err = s.Claim(ctx, "c")
	require.NoError(t, err)
	assert.False(t, won, "a CREATED row is not claimable")

	_, err = s.Claim(ctx, "nope")
	assert.ErrorIs(t, err, store.ErrNotFound)
}

// claimRace: the atomic claim, under contention.
func claimRace(t *testing.T, s store.Store) {
	for i := range 5 {
		require.NoError(t, CheckClaimRace(t.Context(), s, fmt.Sprintf("race-%d", i)))
	}
}

// CheckClaimRace inserts a QUEUED row id, sets Racers goroutines claiming
// it at once, and returns an error unless exactly one won and the row shows
// one attempt. A check-then-act claim (read the status, then update) lets
// several win: the suite's own test proves this check catches one.
func CheckClaimRace(ctx context.Context, s store.Store, id string) error {
	if _, err := s.Insert(ctx, store.Row{ID: id, Kind: "birthday", Status: store.Queued, Due: base}); err != nil {
		return err
	}
	start := make(chan struct{})
	results := make(chan error, Racers)
	var wins sync.WaitGroup
	var mu sync.Mutex
	winners := 0
	for range Racers {
		wins.Go(func() {
			<-start
			won, err := s.Claim(ctx, id)
			if won {
				mu.Lock()
				winners++
				mu.Unlock()
			}
			results <- err
		})
	}
	close(start)
	wins.Wait()
	close(results)
	for err := range results {
		if err != nil {
			return err
		}
	}
	if winners != 1 {
		return fmt.Errorf("claim race on %q: %d of %d claims won, want exactly 1", id, winners, Racers)
	}
	r, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if r.Status != store.Sending || r.Attempts != 1 {
		return fmt.Errorf("claim race on %q: row is %s with %d attempts, want SENDING with 1", id, r.Status, r.Attempts)
	}
	return nil
}

func sendingToSentOrFailed(t *testing.T, s store.Store) {
	ctx := t.Context()
	insert(t, s, store.Queued, 0, "ok", "bad", "unclaimed")
	for _, id := range []string{"ok", "bad"} {
		won, err := s.Claim(ctx, id)
		require.NoError(t, err)
		require.True(t, won)
	}

	require.NoError(t, s.MarkSent(ctx, "ok"))
	assert.Equal(t, store.Sent, get(t, s, "ok").Status)
	won, err := s.Claim(ctx, "ok")
	require.NoError(t, err)
	assert.False(t, won, "a SENT row is never claimed again: the idempotency check")

	require.NoError(t, s.MarkFailed(ctx, "bad", "validation: no email"))
	r := get(t, s, "bad")
	assert.Equal(t, store.Failed, r.Status)
	assert.Equal(t, "validation: no email", r.LastError)

	assert.ErrorIs(t, s.MarkSent(ctx, "unclaimed"), store.ErrNotSending, "only a claimed row is marked sent")
	assert.ErrorIs(t, s.MarkSent(ctx, "ok"), store.ErrNotSending, "SENT twice")
	assert.ErrorIs(t, s.MarkFailed(ctx, "unclaimed", "x"), store.ErrNotSending)
	assert.Equal(t, store.Queued, get(t, s, "unclaimed").Status)
	assert.ErrorIs(t, s.MarkSent(ctx, "nope"), store.ErrNotFound)
	assert.ErrorIs(t, s.MarkFailed(ctx, "nope", "x"), store.ErrNotFound)
}

func requeue(t *testing.T, s store.Store) {
	ctx := t.Context()
	insert(t, s, store.Queued, 0, "flaky")
	_, err := s.Claim(ctx, "flaky")
	require.NoError(t, err)

	require.NoError(t, s.Requeue(ctx, "flaky", "timeout"))
	r := get(t, s, "flaky")
	assert.Equal(t, store.Queued, r.Status)
	assert.Equal(t, "timeout", r.LastError)

	won, err := s.Claim(ctx, "flaky")
	require.NoError(t, err)
	assert.True(t, won, "a requeued row is claimable again")
	require.NoError(t, s.MarkSent(ctx, "flaky"))
	r = get(t, s, "flaky")
	assert.Equal(t, 2, r.Attempts)
	assert.Equal(t, "timeout", r.LastError, "an empty reason keeps the last error")

	assert.ErrorIs(t, s.Requeue(ctx, "flaky", "late"), store.ErrNotSending)
	assert.ErrorIs(t, s.Requeue(ctx, "nope", "x"), store.ErrNotFound)
}

func counts(t *testing.T, s store.Store) {
	ctx := t.Context()
	empty, err := s.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[store.Status]int{store.Created: 0, store.Queued: 0, store.Sending: 0, store.Sent: 0, store.Failed: 0}, empty)

	insert(t, s, store.Created, 0, "c1", "c2", "c3")
	insert(t, s, store.Queued, 0, "q1", "q2")
	_, err = s.Claim(ctx, "q2")
	require.NoError(t, err)
	got, err := s.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[store.Status]int{store.Created: 3, store.Queued: 1, store.Sending: 1, store.Sent: 0, store.Failed: 0}, got)
}

func outbox(t *testing.T, s store.Store) {
	ctx := t.Context()
	insert(t, s, store.Created, 0, "plain")
	plain, err := s.QueueDue(ctx, at(0))
	require.NoError(t, err)
	require.Len(t, plain, 1)
	none, err := s.PendingOutbox(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, none, "QueueDue writes no outbox entry")

	added, err := s.Insert(ctx, store.Row{ID: "w", Kind: "wedding", Due: at(2)})
	require.NoError(t, err)
	require.True(t, added)
	insert(t, s, store.Created, 1, "b")
	insert(t, s, store.Created, 90, "later")
	due, err := s.QueueDueToOutbox(ctx, at(60))
	require.NoError(t, err)
	assert.Equal(t, []string{"b", "w"}, ids(due))

	pending, err := s.PendingOutbox(ctx, 10)
	require.NoError(t, err)
	require.Len(t, pending, 2)
	assert.Equal(t, "b", pending[0].ID)
	assert.Equal(t, "birthday", pending[0].Kind)
	assert.Equal(t, "w", pending[1].ID)
	assert.Equal(t, "wedding", pending[1].Kind)
	assert.Less(t, pending[0].Seq, pending[1].Seq)

	first, err := s.PendingOutbox(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, pending[:1], first, "limit, oldest first")
	for _, limit := range []int{0, -1} {
		none, err := s.PendingOutbox(ctx, limit)
		require.NoError(t, err)
		assert.Empty(t, none, "limit %d", limit)
	}

	require.NoError(t, s.MarkRelayed(ctx, pending[0].Seq))
	require.NoError(t, s.MarkRelayed(ctx, pending[0].Seq), "marking twice is a no-op")
	left, err := s.PendingOutbox(ctx, 10)
	require.NoError(t, err)
	assert.Equal(t, pending[1:], left)
	assert.ErrorIs(t, s.MarkRelayed(ctx, pending[1].Seq+100), store.ErrNotFound)
}

func users(prefix string, n int) []store.User {
	var us []store.User
	for i := range n {
		id := fmt.Sprintf("%s%04d", prefix, i)
		us = append(us, store.User{ID: id, Name: "User " + id, Email: id + "@example.com"})
	}
	return us
}

func countUsers(t *testing.T, s store.Store) int {
	t.Helper()
	n, err := s.CountUsers(t.Context())
	require.NoError(t, err)
	return n
}

func insertUsersAllOrNothing(t *testing.T, s store.Store) {
	ctx := t.Context()
	require.NoError(t, s.InsertUsers(ctx, users("a", 3)))
	assert.Equal(t, 3, countUsers(t, s))

	taken := users("b", 1200) // more than one statement's worth
	taken[1100].Email = "a0001@example.com"
	err := s.InsertUsers(ctx, taken)
	assert.ErrorIs(t, err, store.ErrDuplicate)
	assert.Equal(t, 3, countUsers(t, s), "one taken email fails the whole batch")

	twice := users("c", 3)
	twice[2].Email = twice[0].Email
	assert.ErrorIs(t, s.InsertUsers(ctx, twice), store.ErrDuplicate, "a duplicate inside the batch")
	sameID := users("d", 2)
	sameID[1].ID = "a0000"
	assert.ErrorIs(t, s.InsertUsers(ctx, sameID), store.ErrDuplicate, "a taken id")
	assert.Equal(t, 3, countUsers(t, s))

	require.NoError(t, s.InsertUsers(ctx, users("e", 1200)))
	assert.Equal(t, 1203, countUsers(t, s))
	require.NoError(t, s.InsertUsers(ctx, nil), "an empty batch is no error")
}

func insertUsersSkipping(t *testing.T, s store.Store) {
	ctx := t.Context()
	require.NoError(t, s.InsertUsers(ctx, users("a", 2)))

	batch := users("b", 6)
	batch[1].Email = "a0000@example.com" // taken by a stored user
	batch[3].ID = "a0001"                // id taken
	batch[5].Email = batch[4].Email      // taken earlier in this batch
	skipped, err := s.InsertUsersSkipping(ctx, batch)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 3, 5}, skipped)
	assert.Equal(t, 5, countUsers(t, s), "2 stored + 3 of 6")

	skipped, err = s.InsertUsersSkipping(ctx, users("c", 2))
	require.NoError(t, err)
	assert.Empty(t, skipped)
	assert.Equal(t, 7, countUsers(t, s))
}
