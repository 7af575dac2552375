package q18

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
)

// backends are the two the lesson runs on; the broker half skips without
// a broker (fails under QLAB_REQUIRE_BROKER=1) and uses SQLite, or
// PostgreSQL when QLAB_DATABASE_URL is set.
var backends = []lab.Backend{lab.InMem, lab.Rabbit}

// runPart runs part on backend b as the whole lesson would (an Env, a
// stream that ends in summaries) and returns the events.
func runPart(t *testing.T, b lab.Backend, part lesson.RunFunc) []lab.Event {
	t.Helper()
	l := Lesson
	l.InMem, l.Rabbit = part, part
	events, _ := lessontest.On(t, b, l, lesson.Options{})
	return events
}

// fate is task's fate in the run's summaries.
func fate(events []lab.Event, task string) lab.Fate {
	for _, e := range events {
		if e.Kind == lab.Summary && e.Task == task {
			return e.Fate
		}
	}
	return ""
}

// TestEarlySendAndItsFix: the seed's look-ahead sends every row before it
// is due, the last by more than 58 minutes; publishing at the due minute
// sends none early.
func TestEarlySendAndItsFix(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			var seed, fix outcome
			runPart(t, b, func(ctx context.Context, env *lesson.Env) (err error) {
				if seed, err = runEarly(ctx, env, "early", "E", birthday.Horizon, 0); err != nil {
					return err
				}
				fix, err = runEarly(ctx, env, "due", "D", 0, lastDue)
				return err
			})
			for i, r := range seed.rows {
				early, sent := seed.earlyBy(r)
				require.True(t, sent, r.id)
				if b == lab.InMem { // exact time: one worker, a send every 2 s from 0:00
					want := time.Duration(r.due)*birthday.Tick - time.Duration(i+1)*sendTime
					assert.Equal(t, want, early.Round(time.Millisecond), r.id)
				}
			}
			// On a broker, lesson time includes the machine's lateness: the
			// row due in 59 minutes leaves 5.9 s of real time for it.
			last, _ := seed.earlyBy(seed.rows[len(seed.rows)-1])
			assert.Greater(t, last, 50*time.Minute, "due in 59 minutes, sent at once")
			for _, r := range fix.rows {
				early, sent := fix.earlyBy(r)
				require.True(t, sent, r.id)
				assert.LessOrEqual(t, early, time.Duration(0), "%s is sent at or after due", r.id)
				assert.GreaterOrEqual(t, fix.published[r.id], time.Duration(r.due)*birthday.Tick, r.id)
			}
			assert.Equal(t, 5, seed.counts[store.Sent])
			assert.Equal(t, 5, fix.counts[store.Sent])
		})
	}
}

// TestQueuedBeforePublishIsStuck: with the seed's order the row whose
// publish failed stays QUEUED, unsent, and its task ends lost; publish
// first and the outbox both send every row exactly once, the first by
// absorbing the copy it published again. Through amqp-connection-manager
// (the seed's library) a publish made while the connection is down loses
// nothing: it waits out the reconnect in memory.
func TestQueuedBeforePublishIsStuck(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			var out []outcome
			events := runPart(t, b, func(ctx context.Context, env *lesson.Env) error {
				for _, sv := range stuckVariants {
					o, err := runStuck(ctx, env, sv)
					if err != nil {
						return err
					}
					out = append(out, o)
				}
				return nil
			})
			seed, first, outbox := out[0], out[1], out[2]
			assert.Equal(t, store.Queued, seed.status["Q2"], "the failed row stays QUEUED")
			assert.Empty(t, seed.sends["Q2"], "and is never sent")
			assert.Equal(t, 1, seed.counts[store.Queued])
			assert.Equal(t, 3, seed.counts[store.Sent])
			assert.Equal(t, lab.FateLost, fate(events, "Q2"), "the stream says it is lost")

			for _, o := range []outcome{first, outbox} {
				assert.Equal(t, 4, o.counts[store.Sent], o.name)
				assert.Equal(t, 4, o.sentOnce(), o.name)
				assert.Zero(t, o.sentTwice(), o.name)
			}
			assert.Equal(t, 1, first.absorbed, "P1 went out twice; the claim absorbed one")
			assert.Equal(t, lab.FateDone, fate(events, "P1~2"))
			assert.Zero(t, outbox.absorbed, "the relay published each entry once")
			assert.Equal(t, 4, outbox.messages())
			for _, e := range events {
				if e.Kind == lab.Summary && (e.Task[0] == 'P' || e.Task[0] == 'O') {
					assert.Equal(t, lab.FateDone, e.Fate, "%s: no fix loses a message", e.Task)
				}
			}

			// The seed's own library takes the same fault: it holds M2's
			// publish through its reconnect and sends it a minute late.
			require.Len(t, out, 4)
			lib := out[3]
			assert.Equal(t, 4, lib.counts[store.Sent], "amqp-connection-manager loses nothing")
			assert.Zero(t, lib.counts[store.Queued])
			assert.Equal(t, 4, lib.sentOnce())
			assert.Equal(t, 4, lib.messages())
			assert.GreaterOrEqual(t, lib.published["M2"]-lib.published["M1"], birthday.ReconnectTime,
				"M2 left after the library's reconnect")
			assert.Equal(t, lab.FateDone, fate(events, "M2"))
		})
	}
}

// TestWeddingIsDroppedSilentlyThenCaught: birthday and anniversary are
// sent; wedding without mandatory is (on a broker) acked and never
// returned, and reaches no worker; with mandatory it comes back as
// unroutable. Both wedding tasks end refused in the stream (no queue took
// them).
func TestWeddingIsDroppedSilentlyThenCaught(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			var told []routed
			var o outcome
			events := runPart(t, b, func(ctx context.Context, env *lesson.Env) (err error) {
				told, o, _, err = runRouting(ctx, env)
				return err
			})
			require.Len(t, told, 4)
			byID := map[string]routed{}
			for _, r := range told {
				byID[r.id] = r
			}
			for _, id := range []string{"R1", "R2"} {
				assert.Len(t, o.sends[id], 1, id)
				assert.Equal(t, lab.FateDone, fate(events, id))
			}
			if b == lab.Rabbit {
				assert.True(t, byID["R3"].acked, "the broker confirms the unroutable message")
			}
			assert.False(t, byID["R3"].returned, "and nothing tells the publisher")
			assert.True(t, byID["R4"].returned, "mandatory: the broker returns it")
			assert.Equal(t, lab.FateLost, fate(events, "R3"), "confirmed and dropped: nobody refused it")
			assert.Equal(t, lab.FateRefused, fate(events, "R4"), "returned to the publisher")
			for _, id := range []string{"R3", "R4"} {
				assert.Empty(t, o.sends[id], id)
				assert.Equal(t, store.Queued, o.status[id], id)
			}
		})
	}
}

// TestAtomicClaimAgainstCheckThenAct: a tick published twice under two
// workers; the atomic claim sends each row once and absorbs every copy.
// Check-then-act sends every row twice on both backends, at the lesson's
// 600×: the gate holds each check open until both copies are checked.
func TestAtomicClaimAgainstCheckThenAct(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			var atomic, naive outcome
			runPart(t, b, func(ctx context.Context, env *lesson.Env) (err error) {
				if atomic, err = runTwice(ctx, env, "atomic", "C", atomicClaim); err != nil {
					return err
				}
				naive, err = runTwice(ctx, env, "check_then_act", "K", checkThenAct)
				return err
			})
			assert.Equal(t, 10, atomic.messages())
			assert.Equal(t, 5, atomic.sentOnce())
			assert.Zero(t, atomic.sentTwice())
			assert.Equal(t, 5, atomic.absorbed)
			assert.Equal(t, 5, atomic.counts[store.Sent])

			assert.Equal(t, 10, naive.messages())
			assert.Equal(t, 5, naive.sentOnce()+naive.sentTwice(), "every row is sent")
			assert.Equal(t, 5, naive.counts[store.Sent])
			assert.Equal(t, 5, naive.sentTwice(), "both copies checked before either is sent: every run")
		})
	}
}

// TestLessonAccountsForEveryCopy: the whole lesson in memory, every task
// (each published copy, the stuck row, both wedding messages) has one
// summary, and the fates are the ones the parts teach.
func TestLessonAccountsForEveryCopy(t *testing.T) {
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{})
	summaries := map[string]int{}
	for _, e := range events {
		if e.Kind == lab.Summary {
			summaries[e.Task]++
		}
	}
	for _, task := range res.Tasks {
		assert.Equal(t, 1, summaries[task.ID], task.ID)
		want := lab.FateDone
		switch {
		case slices.Contains(Lesson.LosesOnPurpose, task.ID):
			want = lab.FateLost // the stuck row, and R3: confirmed and dropped
		case task.ID == "R4":
			want = lab.FateRefused // mandatory: returned to the publisher
		}
		assert.Equal(t, want, task.Fate, task.ID)
	}
	assert.Len(t, res.Tables, 4)
}
