package lesson_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/store"
)

// flaky is a store whose database goes away when away is set.
type flaky struct {
	store.Store
	away bool
}

func (f *flaky) Counts(ctx context.Context) (map[store.Status]int, error) {
	if f.away {
		return nil, store.ErrUnavailable
	}
	return f.Store.Counts(ctx)
}

// TestStoresReadsCountsAndKeepsTheFinalOnes: Read returns each store's
// rows by status and its users as the store counts them, in the order the
// stores were added; a closed store keeps the counts read as it closed,
// though its rows change after; a store that stops answering keeps its
// last counts; a nil Stores registers and reads nothing.
func TestStoresReadsCountsAndKeepsTheFinalOnes(t *testing.T) {
	ctx := t.Context()
	var s lesson.Stores
	a, b := store.NewMemory(), store.NewMemory()
	closeA := s.Add("a", "a map", a)
	s.Add("b", "a map", b)
	_, err := a.Insert(ctx, store.Row{ID: "m1", Status: store.Queued, Due: time.Now()})
	require.NoError(t, err)
	require.NoError(t, b.InsertUsers(ctx, []store.User{{ID: "u1", Email: "u1@x"}, {ID: "u2", Email: "u2@x"}}))

	got := s.Read(ctx)
	require.Len(t, got, 2)
	assert.Equal(t, "a", got[0].Name)
	assert.Equal(t, 1, got[0].Counts[store.Queued])
	assert.Equal(t, 2, got[1].Users)
	assert.False(t, got[0].Closed)

	won, err := a.Claim(ctx, "m1")
	require.NoError(t, err)
	require.True(t, won)
	closeA(ctx) // reads SENDING 1, then the store may go
	require.NoError(t, a.MarkSent(ctx, "m1"))
	got = s.Read(ctx)
	assert.True(t, got[0].Closed)
	assert.Equal(t, 1, got[0].Counts[store.Sending], "the counts read as it closed")
	assert.Zero(t, got[0].Counts[store.Sent])

	var away lesson.Stores
	f := &flaky{Store: store.NewMemory()}
	away.Add("f", "a map", f)
	_, err = f.Insert(ctx, store.Row{ID: "m2", Due: time.Now()})
	require.NoError(t, err)
	assert.Equal(t, 1, away.Read(ctx)[0].Counts[store.Created])
	f.away = true
	_, err = f.Insert(ctx, store.Row{ID: "m3", Due: time.Now()})
	require.NoError(t, err)
	assert.Equal(t, 1, away.Read(ctx)[0].Counts[store.Created], "the last counts it gave")

	var none *lesson.Stores
	none.Add("x", "a map", a)(ctx)
	assert.Nil(t, none.Read(ctx))
}
