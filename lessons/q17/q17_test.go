package q17

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/seeds/notify"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// emailQueue is a session with the run's email-queue declared.
func emailQueue(t *testing.T, speed float64) *rabbit.Session {
	s := rabbittest.Session(t, speed)
	require.NoError(t, s.Topo().Declare(testCtx(t), flow.Topology{Queues: []flow.Queue{{Name: notify.EmailQueue, Role: flow.Work}}}))
	return s
}

func TestQ17UnroutableIsConfirmedAndOnlyMandatoryReturnsIt(t *testing.T) {
	s := rabbittest.Session(t, 1)
	u, err := publishUndeclared(testCtx(t), s)
	require.NoError(t, err)
	assert.True(t, u.plain.Confirmed, "the broker acks a job no queue took")
	assert.False(t, u.plain.Returned, "without mandatory nothing comes back")
	assert.True(t, u.mandatory.Confirmed)
	assert.True(t, u.mandatory.Returned, "with mandatory the broker returns it")
	assert.EqualValues(t, 312, u.mandatory.ReplyCode, "NO_ROUTE")
	assert.False(t, u.plain.QueueExists || u.mandatory.QueueExists, "publishing declares nothing")
}

// Every strategy delivers every message when nothing goes wrong; when the
// connection is cut, what the publisher cannot vouch for stays within its
// window, and every confirmed message is in the queue. Under -short only
// (make quick has no run of the whole lesson here): otherwise
// TestQ17Lesson holds the lesson's own measurement to the same claims.
func TestQ17ConfirmStrategies(t *testing.T) {
	if !testing.Short() {
		t.Skip("TestQ17Lesson holds the lesson's own confirm measurement to these claims")
	}
	z := confirmSizes(true) // the brief run's size: the lessons package's suites run it
	cutAt := cutPoint(1, z.messages)
	s := emailQueue(t, 1)
	var said []string
	rows, err := measureConfirms(testCtx(t), s, z, cutAt, func(line string) { said = append(said, line) })
	require.NoError(t, err)
	assertConfirms(t, rows, said, z, cutAt)
}

// assertConfirms holds measureConfirms' rows, and the lines it said, of
// a measurement of size z cut after cutAt to the claims of
// TestQ17ConfirmStrategies.
func assertConfirms(t *testing.T, rows []confirmRow, said []string, z confirmSize, cutAt int) {
	t.Helper()
	assert.Len(t, said, z.repeats*len(confirmStrategies)+len(confirmStrategies), "a line before every publish: %q", said)
	require.NotEmpty(t, said)
	assert.Equal(t, fmt.Sprintf("q17: waitForConfirms after each (the seed), clean run 1 of %d: %d jobs, then waiting for all in the queue", z.repeats, z.messages), said[0])
	require.Len(t, rows, len(confirmStrategies))
	for _, r := range rows {
		w := r.strategy.window
		t.Run(r.strategy.name, func(t *testing.T) {
			assert.Len(t, r.allIn, z.repeats, "every strategy is measured z.repeats times")
			clean := cleanMessages(r.strategy, z.messages)
			assert.Equal(t, clean, r.held, "every clean run: the broker holds every message")
			assert.Equal(t, clean, r.clean.sent)
			assert.Equal(t, cutAt, r.cut.sent, "the cut comes right after message cutAt")
			assert.LessOrEqual(t, r.cutHeld, r.cut.sent, "the broker cannot hold more than was sent")
			assert.GreaterOrEqual(t, r.cutHeld, r.cut.confirmed, "every confirmed message is in the queue")
			if w == 0 {
				assert.Zero(t, r.clean.confirmed+r.cut.confirmed, "no confirm mode, no confirms")
				assert.Equal(t, cutAt, r.cut.unknown(), "without confirms the publisher can vouch for nothing")
				return
			}
			assert.Equal(t, clean, r.clean.confirmed, "a clean run: every message confirmed")
			assert.LessOrEqual(t, r.clean.maxOut, w, "never more than the window waits for a confirm")
			assert.Equal(t, min(w, clean), r.clean.maxOut, "the window fills")
			assert.LessOrEqual(t, r.cut.unknown(), w, "what the cut leaves unknown is bounded by the window")
		})
	}
}

func TestQ17CutPointIsSeededInTheSecondHalf(t *testing.T) {
	for seed := range int64(50) {
		k := cutPoint(seed, 600)
		assert.GreaterOrEqual(t, k, 300)
		assert.Less(t, k, 450)
		assert.Equal(t, k, cutPoint(seed, 600), "the same seed cuts at the same message")
	}
}

// A brief run (lesson.Options.Brief, the stream suites') publishes a
// fraction of the full run's messages, still over two clean runs (a
// median and a spread) and a cut in the second half of its messages; its
// confirm table says the counts it ran. No broker: the sizes decide it.
func TestQ17BriefMeasuresLess(t *testing.T) {
	full, brief := confirmSizes(false), confirmSizes(true)
	assert.Equal(t, confirmSize{messages: confirmMessages, repeats: confirmRepeats}, full, "a full run is the lesson's")
	published := func(z confirmSize) int {
		n := 0
		for _, s := range confirmStrategies {
			n += z.repeats*cleanMessages(s, z.messages) + z.messages
		}
		return n
	}
	assert.Less(t, published(brief)*5, published(full), "a brief run publishes under a fifth")
	assert.GreaterOrEqual(t, brief.repeats, 2, "a median and a spread need two runs")
	for seed := range int64(50) {
		k := cutPoint(seed, brief.messages)
		assert.GreaterOrEqual(t, k, brief.messages/2, "the cut is in the second half")
		assert.Less(t, k, brief.messages, "the cut comes before the last message")
	}
	var rows []confirmRow
	for _, s := range confirmStrategies {
		rows = append(rows, confirmRow{strategy: s, clean: publishRun{sent: cleanMessages(s, brief.messages)}})
	}
	tb := confirmTable("3.10.8", rows, brief, cutPoint(1, brief.messages))
	assert.Contains(t, tb.Header[1], fmt.Sprintf("(min–max of %d)", brief.repeats))
	assert.Contains(t, tb.Notes[0], fmt.Sprintf("%d persistent jobs per clean run", brief.messages))
	assert.Contains(t, tb.Notes[0], fmt.Sprintf("%d clean runs per strategy", brief.repeats))
}

// testEnv is an Env for running one part of the lesson on the broker.
func testEnv(speed float64) (*lesson.Env, *labtest.Recorder) {
	var rec labtest.Recorder
	return &lesson.Env{Stream: lab.NewStream("q17", lab.Rabbit, lab.NewClock(speed), &rec)}, &rec
}

// The broker never lets a worker hold more than its prefetch unacked;
// prefetch 1 gives the fast worker most jobs, unlimited deals them out
// evenly, so the slow worker holds far more than 10. Counts, not times.
func TestQ17PrefetchDistribution(t *testing.T) {
	const speed = 5
	s := emailQueue(t, speed)
	for _, p := range prefetchSettings {
		t.Run(prefetchName(p), func(t *testing.T) {
			env, rec := testEnv(speed)
			run, err := runJobs(testCtx(t), env, s, fmt.Sprintf("p%d-", p), prefetchJobs,
				&worker{name: "Slow-Worker", prefetch: p, work: slowWork, concurrency: 1},
				&worker{name: "Fast-Worker", prefetch: p, work: fastWork, concurrency: 1})
			require.NoError(t, err)
			slow, fast := run.workers[0], run.workers[1]
			assert.EqualValues(t, prefetchJobs, slow.got.Load()+fast.got.Load(), "every job handled once")
			env.Stream.Finish()
			labtest.AssertAccounted(t, rec.Events())
			switch p {
			case 0:
				assert.Greater(t, slow.maxHeld.Load(), int64(10), "unlimited: the slow worker is handed a share of everything")
				assert.InDelta(t, prefetchJobs/2, slow.got.Load(), prefetchJobs/6, "unlimited deals the jobs out about evenly")
			default:
				assert.LessOrEqual(t, slow.maxHeld.Load(), int64(p), "never more than the prefetch unacked")
				assert.LessOrEqual(t, fast.maxHeld.Load(), int64(p))
			}
			if p == 1 {
				assert.Greater(t, fast.got.Load(), slow.got.Load(), "prefetch 1: the fast worker takes more")
			}
		})
	}
}

// Seed 003's worker: prefetch 5 lets five deliveries in, but a delivery
// loop runs one handler at a time; a goroutine per delivery runs several,
// never more than the prefetch.
func TestQ17SeedConcurrencyIsTheHandlersNotThePrefetch(t *testing.T) {
	const speed = 10
	s := emailQueue(t, speed)
	for _, c := range []int{1, seedPrefetch} {
		env, _ := testEnv(speed)
		run, err := runJobs(testCtx(t), env, s, fmt.Sprintf("s%d-", c), seedJobs,
			&worker{name: "Birthday-Worker", prefetch: seedPrefetch, work: seedWork, concurrency: c})
		require.NoError(t, err)
		w := run.workers[0]
		assert.EqualValues(t, seedJobs, w.got.Load())
		assert.LessOrEqual(t, w.maxHeld.Load(), int64(seedPrefetch))
		if c == 1 {
			assert.EqualValues(t, 1, w.maxBusy.Load(), "one delivery loop, one handler at a time")
			continue
		}
		assert.Greater(t, w.maxBusy.Load(), int64(1), "goroutines per delivery run handlers side by side")
		assert.LessOrEqual(t, w.maxBusy.Load(), int64(seedPrefetch), "never more than the prefetch let in")
	}
}

// TestQ17Lesson runs the whole lesson once (its confirm measurement is
// most of the package's time) and holds its tables, its events and its
// confirm measurement (assertConfirms) to their claims.
func TestQ17Lesson(t *testing.T) {
	if testing.Short() {
		t.Skip("make quick: one broker pass, the lessons package's run of Q17")
	}
	var m measured
	l := Lesson
	l.Rabbit = func(ctx context.Context, env *lesson.Env) (err error) {
		m, err = measure(ctx, env)
		return err
	}
	var log labtest.Log
	events, res := lessontest.RunRabbit(t, l, lesson.Options{Logger: slog.New(&log)})
	labtest.AssertAccounted(t, events)
	confirms := lessontest.TableTitled(t, res.Tables, "Publishing: confirms")
	assert.Contains(t, confirms.Title, "RabbitMQ ", "the figures name the broker version")
	assert.Len(t, confirms.Rows, len(confirmStrategies))
	early := lessontest.TableTitled(t, res.Tables, "A job published before email-queue existed")
	assert.Equal(t, "ack", early.Rows[0][1])
	assert.Contains(t, early.Rows[1][2], "312 NO_ROUTE")
	assert.Len(t, lessontest.TableTitled(t, res.Tables, fmt.Sprintf("%d jobs, a slow worker", prefetchJobs)).Rows, len(prefetchSettings))
	seed := lessontest.TableTitled(t, res.Tables, "The birthday scheduler's claim")
	require.Len(t, seed.Rows, 2)
	assert.Equal(t, "1", seed.Rows[0][1], "the delivery loop ran one handler at a time")
	for _, task := range []string{"p1-01", "p0-30", "s1-10", "s5-01"} {
		fate, attempts := labtest.Summary(t, events, task)
		assert.Equal(t, lab.FateDone, fate, task)
		assert.Equal(t, 1, attempts, task)
	}
	t.Run("confirm strategies", func(t *testing.T) {
		assertConfirms(t, m.confirms, prefixed(&log, "q17: "), confirmSizes(false), m.cutAt)
	})
}

// prefixed is the messages of log that start with prefix, in order.
func prefixed(log *labtest.Log, prefix string) []string {
	var out []string
	for _, m := range log.Messages() {
		if strings.HasPrefix(m, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// The confirm table shows each strategy's median and spread, orders the
// rows by the median, and says which neighbours this machine cannot tell
// apart (issue 20: one run of 400 swapped two rows).
func TestQ17ConfirmTableOrdersByMedianAndShowsTheSpread(t *testing.T) {
	ms := func(ds ...int) []time.Duration {
		var out []time.Duration
		for _, d := range ds {
			out = append(out, time.Duration(d)*time.Millisecond)
		}
		return out
	}
	rows := []confirmRow{
		{strategy: confirmStrategy{"fast", 0}, clean: publishRun{sent: 100}, allIn: ms(10, 12, 30), elapsed: ms(10, 12, 30)},
		{strategy: confirmStrategy{"slow", 1}, clean: publishRun{sent: 100}, allIn: ms(1000, 1100, 900), elapsed: ms(1000, 1100, 900)},
		{strategy: confirmStrategy{"middle", 64}, clean: publishRun{sent: 100}, allIn: ms(25, 40, 50), elapsed: ms(25, 40, 50)},
	}
	got := rates(100, rows[0].allIn)
	assert.Equal(t, "8333 (3333–10000)", got.String())
	tb := confirmTable("3.10.8", rows, confirmSize{messages: 100, repeats: 3}, 50)
	var order []string
	for _, r := range tb.Rows {
		order = append(order, r[0])
	}
	assert.Equal(t, []string{"slow", "middle", "fast"}, order, "slowest median first")
	assert.Equal(t, "100 (91–111)", tb.Rows[0][2])
	assert.Contains(t, tb.Notes[len(tb.Notes)-1], `"middle" and "fast" overlap`, "30 ms and 25 ms: the ranges overlap")
	assert.NotContains(t, tb.Notes[len(tb.Notes)-1], `"slow"`)
}
