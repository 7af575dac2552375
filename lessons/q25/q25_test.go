package q25

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/lessons/q19"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/seeds/birthday"
)

// TestBrokerDelayIsTheGuidesRule: min × x-delivery-count up to max; a
// nack counts nothing and waits the minimum under all and returned, and
// is not delayed under failed; reject and a closed channel are not
// delayed under returned.
func TestBrokerDelayIsTheGuidesRule(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= DeliveryLimit; n++ {
		got = append(got, BrokerDelay(TypeFailed, Reject, n, MinDelay, MaxDelay))
	}
	s := time.Second
	assert.Equal(t, []time.Duration{2 * s, 4 * s, 6 * s, 8 * s, 10 * s}, got)
	assert.Equal(t, MaxDelay, BrokerDelay(TypeAll, Reject, 100, MinDelay, MaxDelay), "capped")
	assert.Equal(t, MinDelay, BrokerDelay(TypeAll, Nack, 0, MinDelay, MaxDelay), "a count of 0 waits the minimum")
	assert.Equal(t, MinDelay, BrokerDelay(TypeReturned, Nack, 0, MinDelay, MaxDelay))
	assert.Zero(t, BrokerDelay(TypeFailed, Nack, 0, MinDelay, MaxDelay))
	assert.Zero(t, BrokerDelay(TypeReturned, Reject, 3, MinDelay, MaxDelay))
	assert.Zero(t, BrokerDelay(TypeReturned, Close, 3, MinDelay, MaxDelay))
	assert.Equal(t, birthday.Delay(birthday.MaxRetries-1), MaxDelay, "the seed's longest wait")
}

// tick is one millisecond of real time in lesson time at the test speed:
// the broker's timers count whole milliseconds, so a held message may
// come back up to a millisecond before its exact delay.
var tick = time.Duration(float64(time.Millisecond) * Lesson.TestSpeed)

// runAll runs the whole lesson on the 4.3 node as qlab run would, and
// returns its events and what each part measured.
func runAll(t *testing.T) ([]lab.Event, parts) {
	t.Helper()
	var p parts
	l := Lesson
	l.Rabbit = func(ctx context.Context, env *lesson.Env) (err error) {
		p, err = runParts(ctx, env)
		return err
	}
	events, _ := lessontest.RunRabbit(t, l, lesson.Options{})
	return events, p
}

// TestQ25 runs the lesson once on RabbitMQ 4.3 and holds what each part
// shows: order, fates, attempts, the counts the broker wrote and the
// configured delays (a wait is never shorter than the broker's delay;
// how much longer is the machine's load, not asserted).
func TestQ25(t *testing.T) {
	events, p := runAll(t)
	labtest.AssertAccounted(t, events)
	fates := map[string]lab.Event{}
	for _, e := range events {
		if e.Kind == lab.Summary {
			fates[e.Task] = e
		}
	}
	t.Run("a: the broker waits, no slot is held", func(t *testing.T) {
		a := p.a
		// A task whose delay had not run out at the look is held by the
		// broker: failed, not in the worker's hands, not ready. Only the
		// due ones and those not yet delivered (none on a quiet machine;
		// stop 38's CI had one) may be ready.
		l := a.look
		t.Logf("look at %s: %d waiting, %d due, %d fresh, %d held, %d ready", l.at, l.waiting, l.due, l.fresh, l.held, l.ready)
		assert.Positive(t, l.at)
		assert.GreaterOrEqual(t, l.waiting, Slots-l.due, "every task not due is waiting at %s (%d due)", l.at, l.due)
		assert.LessOrEqual(t, l.held, l.due, "a held message takes no prefetch slot (%d held, %d due)", l.held, l.due)
		assert.LessOrEqual(t, l.held+l.ready, l.due+l.fresh,
			"nor is it ready: the broker holds it delayed (%d held, %d ready, %d due, %d not delivered yet)", l.held, l.ready, l.due, l.fresh)
		assert.GreaterOrEqual(t, l.ready, 0, "the passive declare answered")
		// The five failing tasks fill the five slots. Were a waiting
		// message to keep its slot, DH could start only once a D was
		// acked, and none succeeds before the rate limit ends. (On a quiet
		// machine DH even comes before any retry; s2 of 2026-11-28 saw it
		// a millisecond after the first, and two retries before it.)
		firstDone := time.Duration(-1)
		for i := 1; i <= Slots; i++ {
			for _, r := range of(a.rows, "D"+string(rune('0'+i))) {
				if r.err == nil && (firstDone < 0 || r.at < firstDone) {
					firstDone = r.at
				}
			}
		}
		t.Logf("DH first tried at %v, after %d attempts; the first D acked at %v", a.firstH, a.beforeH, firstDone)
		require.Positive(t, firstDone, "some D succeeds")
		assert.Less(t, a.firstH, firstDone, "DH is tried while every D still fails: no waiting message holds its slot")
		for i := 1; i <= Slots; i++ {
			task := "D" + string(rune('0'+i))
			rows := of(a.rows, task)
			// Rate-limited for 30 s: a delivery that began inside the limit
			// failed, the first after it succeeded and was the last. How
			// many that takes is lateness: with waits of 2, 4, 6, 8, 10 s
			// the sixth, on time; with both cores busy D5 first came at
			// 5.2 s and its fifth, at 30.5 s, was past the limit (ci110).
			require.NotEmpty(t, rows, task)
			for n, r := range rows {
				assert.Equal(t, r.at < q19.LimitFor, r.err != nil, "%s delivery %d at %v fails while the limit lasts", task, n+1, r.at)
				assert.Equal(t, n < len(rows)-1, r.err != nil, "%s: only its last delivery succeeds", task)
			}
			assert.Equal(t, lab.FateDone, fates[task].Fate, task)
			for n, r := range rows {
				assert.Equal(t, n, r.count, "%s delivery %d carries x-delivery-count %d", task, n+1, n)
				if n > 0 {
					assert.GreaterOrEqual(t, r.at-rows[n-1].end, BrokerDelay(TypeFailed, Reject, n, MinDelay, MaxDelay)-tick,
						"%s waits 2 s × %d", task, n)
				}
			}
		}
		assert.Equal(t, lab.FateDone, fates[healthy].Fate)
		assert.Equal(t, 1, fates[healthy].Attempt)
	})
	t.Run("b: which settle is delayed", func(t *testing.T) {
		require.Len(t, p.b, 9)
		for _, c := range p.b {
			require.Len(t, c.waits, settleFailures, c.task())
			var atOnce []time.Duration // the waits the broker does not hold
			for i, w := range c.waits {
				after := i + 1
				if !c.settle.Counts() {
					after = 0
				}
				want := BrokerDelay(c.retryType, c.settle, after, settleLo, settleHi)
				if want == 0 {
					atOnce = append(atOnce, w)
				} else {
					assert.GreaterOrEqual(t, w, want-tick, "%s wait %d", c.task(), i+1)
				}
			}
			// A held message is never back before the minimum, so one
			// return sooner shows these are not held; a loaded machine
			// may make any one late (s1, 2026-11-28: 6 s of lesson time).
			if len(atOnce) > 0 {
				assert.Less(t, slices.Min(atOnce), settleLo, "%s: back at once, not held the minimum: %v", c.task(), atOnce)
			}
			last := c.counts[len(c.counts)-1]
			if c.settle.Counts() {
				assert.Equal(t, settleFailures, last, "%s counts every failure", c.task())
			} else {
				assert.Zero(t, last, "%s: a nack counts nothing", c.task())
			}
			assert.Equal(t, lab.FateDone, fates[c.task()].Fate, c.task())
		}
	})
	t.Run("c: reject reaches the limit, nack never", func(t *testing.T) {
		p1 := of(p.c.rows, "P1")
		require.Len(t, p1, DeliveryLimit+1)
		for n, r := range p1 {
			assert.Equal(t, n, r.count)
		}
		assert.Equal(t, "delivery_limit", p.c.deaths["P1"])
		assert.Equal(t, lab.FateDead, fates["P1"].Fate)
		p2 := of(p.c.rows, "P2")
		require.Len(t, p2, guard)
		for n, r := range p2 {
			assert.Zero(t, r.count, "P2 delivery %d", n+1)
			assert.Equal(t, n, r.acquired, "P2 delivery %d: the broker counts the acquisitions", n+1)
			if n > 0 {
				assert.GreaterOrEqual(t, r.at-p2[n-1].end, MinDelay-tick, "type all holds a nack the minimum")
			}
		}
		assert.Equal(t, lab.FateDropped, fates["P2"].Fate)
		assert.NotContains(t, p.c.deaths, "P2")
	})
	t.Run("each hand-back says where the message goes", func(t *testing.T) {
		// The lesson's queues declare x-delivery-limit: a quorum queue's
		// place then (rabbit.TestRequeuePlaceIsMeasured, TestHeldPlaceIsMeasured).
		place := rabbit.RequeuePlace(true, true, p.a.version)
		kinds := map[lab.Kind]int{}
		for _, e := range events {
			if e.Actor == "broker" && (e.Kind == lab.Scheduled || e.Kind == lab.Moved) {
				kinds[e.Kind]++
				assert.Contains(t, e.Note, place, "%s %s", e.Kind, e.Task)
			}
		}
		assert.Positive(t, kinds[lab.Scheduled], "held and handed back")
		assert.Positive(t, kinds[lab.Moved], "handed back at once (part b)")
	})
	t.Run("d: Q19's wait queues beside it", func(t *testing.T) {
		// Q19's load waits for each publish's confirm, which on a loaded
		// machine can put WH's behind a retry or two (Q19's own test says
		// so): it still waits for no slot, and is tried before the limit
		// ends, as part (a)'s DH is.
		assert.GreaterOrEqual(t, p.d.BeforeH, 5, "WH is tried after the five first attempts")
		assert.Less(t, p.d.FirstH, q19.LimitFor, "WH is tried while the five still fail: it waits for no slot")
		assert.GreaterOrEqual(t, p.d.Attempts, 5*2)
		// The attempt counts of the two ways are each real time: load
		// makes a wait longer, so a run can only count fewer than the
		// schedule (ci110: D5 took 5). The claim is the schedules'.
		linear := onTime(func(n int) time.Duration { return BrokerDelay(TypeFailed, Reject, n, MinDelay, MaxDelay) })
		doubling := onTime(seedDelay)
		assert.Equal(t, []int{6, 5}, []int{linear, doubling},
			"on time, the linear back-off tries each of the five six times, the doubling five (the table's note)")
		assert.LessOrEqual(t, p.a.attempts, Slots*linear, "the broker never retries early")
		assert.LessOrEqual(t, p.d.Attempts, Slots*doubling, "nor does a wait queue")
	})
}

// onTime is how many attempts one of part (a)'s rate-limited tasks
// takes when every wait is exactly delay(n) after failure n: the first
// attempt that starts after q19.LimitFor succeeds.
func onTime(delay func(n int) time.Duration) int {
	var at time.Duration
	n := 1
	for ; at < q19.LimitFor; n++ {
		at += q19.SendTime + delay(n)
	}
	return n
}

// TestOlderBrokerSaysWhatItDidAndStops: on RabbitMQ older than 4.3 (the
// suites' 3.10.8) the preflight declares the queue, finds the delayed
// retry ignored (or refused), and says so in one line that wraps
// ErrBrokerTooOld; it leaves no queue behind.
func TestOlderBrokerSaysWhatItDidAndStops(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := rabbit.Probe(ctx, url, "test")
	require.NoError(t, err)
	if lesson.VersionAtLeast(b.Version, MinBroker) {
		t.Skipf("the suites' broker is RabbitMQ %s, not older than %s", b.Version, MinBroker)
	}
	err = Preflight(ctx, url)
	require.Error(t, err)
	assert.True(t, errors.Is(err, lesson.ErrBrokerTooOld), "%v", err)
	assert.NotContains(t, err.Error(), "\n")
	assert.Contains(t, err.Error(), "RabbitMQ "+b.Version)
	if b.Version == "3.10.8" { // measured: it takes the arguments and ignores them
		assert.Contains(t, err.Error(), "ignored it: a rejected message came back after")
		// The trial's queue declares x-delivery-limit, as the lesson's do.
		assert.Contains(t, err.Error(), rabbit.RequeuePlace(true, true, b.Version))
	}
	_, err = lesson.Run(ctx, Lesson, lesson.Options{Backend: lab.Rabbit, Broker: url, Speed: 20})
	assert.True(t, errors.Is(err, lesson.ErrBrokerTooOld), "the run refuses too: %v", err)
}

// TestNoticeIsTheCodes: the numbers the notice and page claim are the
// constants the run declares.
func TestNoticeIsTheCodes(t *testing.T) {
	assert.True(t, strings.Contains(Lesson.Notice, "2, 4, 6, 8, 10 s"))
	assert.True(t, strings.Contains(Lesson.Notice, "x-delivery-limit 5"))
	args := Arguments(TypeFailed, MinDelay, MaxDelay, DeliveryLimit, "dlq")
	assert.Equal(t, int64(2000), args["x-delayed-retry-min"])
	assert.Equal(t, int64(32000), args["x-delayed-retry-max"])
	assert.Equal(t, int64(5), args["x-delivery-limit"])
	assert.Equal(t, "quorum", args["x-queue-type"])
}
