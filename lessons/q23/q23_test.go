package q23

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/lessons/runstore"
	"github.com/queuelab/qlab/store/sqlstore"
)

var backends = []lab.Backend{lab.InMem, lab.Rabbit}

// runOn runs parts on backend b as the lesson does (one users table, Taken
// stored before the first poisoned part) and returns the run's events.
func runOn(t *testing.T, b lab.Backend, parts ...*part) []lab.Event {
	t.Helper()
	l := Lesson
	run := func(ctx context.Context, env *lesson.Env) error {
		db, err := runstore.Open(ctx, env, "users")
		if err != nil {
			return err
		}
		defer db.Drop()
		return runParts(ctx, env, db, parts)
	}
	l.InMem, l.Rabbit = run, run
	events, _ := lessontest.On(t, b, l, lesson.Options{})
	return events
}

// fates reads each task's summary and the reason it was parked with.
func fates(events []lab.Event) (summaries map[string]lab.Event, parked map[string]string) {
	summaries, parked = map[string]lab.Event{}, map[string]string{}
	for _, e := range events {
		switch e.Kind {
		case lab.Summary:
			summaries[e.Task] = e
		case lab.DeadLettered:
			parked[e.Task] = e.Note
		}
	}
	return summaries, parked
}

// poisoned returns parts (c) and (d) of the lesson.
func poisoned() (seed, fix *part) {
	ps := newParts()
	return ps[4], ps[5]
}

// TestOneBadRowPoisonsTheSeedsBatch: the seed's whole-batch insert fails
// every user of the batch; each goes round the retry queue and is parked
// after its third delivery, and the table gains no row. The fix stores the
// nine healthy users on their first delivery and parks only the bad one,
// at once, saying its email is taken; the table gains exactly the nine.
func TestOneBadRowPoisonsTheSeedsBatch(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			seed, fix := poisoned()
			events := runOn(t, b, seed, fix)
			summaries, parked := fates(events)
			if b == lab.Rabbit { // the seed's header counts the rounds; memory has no headers
				notes := map[string]bool{}
				for _, e := range events {
					if e.Kind == lab.Scheduled && strings.HasPrefix(e.Task, seed.Prefix) {
						notes[e.Note] = true
					}
				}
				assert.Contains(t, notes, "republished to raffle_retry_10s with x-retries=2, then acked")
			}
			bad := seed.user((BatchSize + 1) / 2).ID
			for i := 1; i <= BatchSize; i++ {
				id := seed.user(i).ID
				assert.Equal(t, lab.FateDead, summaries[id].Fate, id)
				assert.Equal(t, MaxAttempts, summaries[id].Attempt, id)
				assert.Contains(t, parked[id], "attempt 3 of 3 failed", id)
				assert.Contains(t, parked[id], "duplicate user", id)
			}
			assert.Zero(t, seed.Measured().Added, "the seed stores none of the batch")
			assert.Equal(t, BatchSize*MaxAttempts, seed.Measured().Deliveries)

			badFix := fix.user((BatchSize + 1) / 2).ID
			for i := 1; i <= BatchSize; i++ {
				id := fix.user(i).ID
				want := lab.FateDone
				if id == badFix {
					want = lab.FateDead
				}
				assert.Equal(t, want, summaries[id].Fate, id)
				assert.Equal(t, 1, summaries[id].Attempt, id)
			}
			assert.Contains(t, parked[badFix], "permanent")
			assert.Contains(t, parked[badFix], "email john@email.com is taken")
			assert.Len(t, parked, BatchSize+1, "the seed's ten and the fix's one")
			assert.Equal(t, BatchSize-1, fix.Measured().Added, "the table gains the nine")
			assert.NotEqual(t, bad, badFix)
		})
	}
}

// TestPrefetchLimitsTheBatch: with every user queued at once, a batcher
// whose prefetch is the batch size fills a batch; one whose prefetch is 4
// never holds more than 4, whatever waits in the queue.
func TestPrefetchLimitsTheBatch(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			// A batch of the small prefetch never fills: each waits out the
			// timeout, 1.5 s real at 20×. The full one flushes as it fills,
			// so its timeout only has to outlast the publishes, which a
			// loaded broker confirms late: PoisonWait, as parts (c) and (d).
			const wait = 30 * time.Second
			full := &part{Title: "full", Prefix: "w", Users: 2 * BatchSize, Seed: true,
				OneBatcher: true, Wait: PoisonWait}
			small := &part{Title: "small", Prefix: "n", Users: 2 * BatchSize, Seed: true,
				OneBatcher: true, Wait: wait, Prefetch: SmallPrefetch}
			summaries, _ := fates(runOn(t, b, full, small))
			assert.Equal(t, BatchSize, slices.Max(full.Measured().Batches))
			if b == lab.InMem { // exact: the second batch fills too
				assert.Equal(t, []int{BatchSize, BatchSize}, full.Measured().Batches)
			}
			assert.GreaterOrEqual(t, len(small.Measured().Batches), 2*BatchSize/SmallPrefetch)
			assert.Equal(t, SmallPrefetch, slices.Max(small.Measured().Batches))
			for id, s := range summaries {
				assert.Equal(t, lab.FateDone, s.Fate, id)
			}
			assert.Equal(t, 4*BatchSize, full.Measured().Added+small.Measured().Added)
		})
	}
}

// TestRates: in exact lesson time, at a low rate every batch is flushed by
// its timer (none fills) and each user waits at most the timeout; at a high
// rate the batches fill and nobody waits that long. Below the batch size,
// the prefetch makes every batch wait out the timeout with 4.
func TestRates(t *testing.T) {
	ps := newParts()
	runOn(t, lab.InMem, ps[:3]...) // part (b)'s second run has a test of its own
	low, high, small := ps[0].Measured(), ps[1].Measured(), ps[2].Measured()
	for _, n := range low.Batches {
		assert.Less(t, n, BatchSize)
	}
	assert.Equal(t, BatchWait.Milliseconds(), low.Max, "the first of a batch waits T")
	assert.Equal(t, []int{BatchSize, BatchSize, BatchSize, BatchSize}, high.Batches)
	assert.Less(t, high.Max, BatchWait.Milliseconds())
	assert.Greater(t, high.UsersPerSec, 5*low.UsersPerSec)
	assert.Equal(t, []int{4, 4, 4, 4}, small.Batches)
	assert.GreaterOrEqual(t, small.P50, BatchWait.Milliseconds())
}

// TestBroadwaysDefaultPrefetchNeverFillsTheSeedsBatch: the seed's batch of
// 1000 behind broadway_rabbitmq's default prefetch of 50 holds 50 at most,
// and each batch waits out the timer, on both backends; the table says
// why, naming the library's version.
func TestBroadwaysDefaultPrefetchNeverFillsTheSeedsBatch(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			p := newParts()[3]
			require.Equal(t, SeedBatchSize, p.size(), "unscaled")
			runOn(t, b, p)
			m := p.Measured()
			// On the broker a batch's timer may end before the publishes
			// have filled the window (a busy machine); it never holds more.
			assert.LessOrEqual(t, slices.Max(m.Batches), BroadwayPrefetch, "a window of 50, never 1000")
			assert.GreaterOrEqual(t, len(m.Batches), BroadwayUsers/BroadwayPrefetch)
			assert.Equal(t, BroadwayUsers, m.Inserted)
			if b == lab.InMem { // exact lesson time: every batch waits out its timer
				assert.Equal(t, []int{BroadwayPrefetch, BroadwayPrefetch}, m.Batches)
				assert.Equal(t, BatchWait.Milliseconds(), m.P50)
			}
		})
	}
	_, res := lessontest.RunInMem(t, Lesson, lesson.Options{})
	table := lessontest.TableTitled(t, res.Tables, "Batches of up to")
	assert.Contains(t, fmt.Sprint(table.Rows), "Broadway's prefetch 50, batch 1000 100 2 50.0 (max 50) 1.00 s")
	assert.Contains(t, strings.Join(table.Notes, " "), "has broadway_rabbitmq 0.8.2 ask for prefetch_count 50")
	assert.Contains(t, Lesson.Notice, "Broadway's default prefetch of 50")
}

// TestEveryUserAccountedFor: the whole lesson on each backend, one summary
// per user, each stored once or parked with a reason, and the table's new
// rows are the users whose summary says done.
func TestEveryUserAccountedFor(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			ps := newParts()
			summaries, parked := fates(runOn(t, b, ps...))
			users := 0
			for _, p := range ps {
				done := 0
				for i := 1; i <= p.Users; i++ {
					id := p.user(i).ID
					s, ok := summaries[id]
					require.True(t, ok, "%s has a summary", id)
					switch s.Fate {
					case lab.FateDone:
						done++
					case lab.FateDead:
						assert.NotEmpty(t, parked[id], "%s parked with a reason", id)
					default:
						t.Errorf("%s: %s", id, s.Fate)
					}
				}
				users += p.Users
				assert.Equal(t, done, p.Measured().Added, p.Title)
				assert.Equal(t, done, p.Measured().Inserted, p.Title)
			}
			assert.Len(t, summaries, users)
		})
	}
}

// TestNoticeIsTheCode: the notice's numbers are the lesson's.
func TestNoticeIsTheCode(t *testing.T) {
	for _, s := range []string{"up to 10 or 1 s", "2 batchers", "prefetch of 4", "3 attempts",
		"x-retries+1", "9 are stored"} {
		assert.Contains(t, Lesson.Notice, s)
	}
	assert.Equal(t, 10, BatchSize)
	assert.Equal(t, time.Second, BatchWait)
	assert.True(t, strings.HasPrefix(SeedRetryHeader, "x-"))
}

// TestMeasureInsertsTimesBothWays: on SQLite, both ways store every user
// and take some time; the table prints the ratio it measured.
func TestMeasureInsertsTimesBothWays(t *testing.T) {
	ctx := t.Context()
	db, err := sqlstore.Open(ctx, sqlstore.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	defer db.Close()
	c, err := MeasureInserts(ctx, db, 20)
	require.NoError(t, err)
	n, err := db.CountUsers(ctx)
	require.NoError(t, err)
	assert.Equal(t, 40, n)
	assert.Positive(t, c.Batch)
	assert.Positive(t, c.Single)
	assert.Contains(t, costTable(c, "SQLite").Notes[0], fmt.Sprintf("%.1f×", c.Ratio()))
}
