package q14

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/notify"
)

// TestQ14 runs the lesson on each backend and checks what holds on both:
// every job's fate and attempts, the delays the seed's arithmetic
// configures, and the order the retries came back in, which is where
// head-of-line blocking shows without reading a clock.
func TestQ14(t *testing.T) {
	t.Parallel() // beside the quorum runs: each broker run has its own names
	for _, b := range Lesson.Backends() {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			events, res := lessontest.On(t, b, Lesson, lesson.Options{})
			labtest.AssertAccounted(t, events)
			for _, st := range strategies() {
				assertFates(t, events, st.prefix)
				assertDelays(t, events, st)
				assertHeadOfLine(t, events, st.prefix, !st.levels)
			}
			rows := lessontest.TableTitled(t, res.Tables, "What happened to each retry").Rows
			assert.Len(t, rows, 3*8, "eight retries per run: A's four, B's one, C's two, E's one")
		})
	}
}

// assertFates: A walks the whole schedule into the DLQ (five attempts,
// four retries); the others fail as often as the load says, then succeed.
func assertFates(t *testing.T, events []lab.Event, prefix string) {
	t.Helper()
	for _, j := range load {
		fate, attempts := labtest.Summary(t, events, prefix+j.id)
		if j.failures >= notify.MaxRetries {
			assert.Equal(t, []any{lab.FateDead, notify.MaxRetries}, []any{fate, attempts}, prefix+j.id)
			continue
		}
		assert.Equal(t, []any{lab.FateDone, j.failures + 1}, []any{fate, attempts}, prefix+j.id)
	}
	parked := labtest.Of(events, prefix+"A", lab.DeadLettered)
	require.Len(t, parked, 1)
	assert.Equal(t, notify.DLQ, parked[0].To)
}

// assertDelays: A's retries wait the seed's 30 s, 1 min, 2 min, 5 min
// (in lesson time), through the one retry queue or each level's wait queue.
func assertDelays(t *testing.T, events []lab.Event, st strategy) {
	t.Helper()
	var delays []int64
	for _, e := range labtest.Of(events, st.prefix+"A", lab.Scheduled) {
		delays = append(delays, e.DelayMs)
		assert.Equal(t, st.via(time.Duration(e.DelayMs)*time.Millisecond), e.Via)
		assert.Equal(t, notify.EmailQueue, e.To)
	}
	assert.Equal(t, []int64{30_000, 60_000, 120_000, 300_000}, delays, "%sA: the seed's waits from retries++", st.prefix)
}

// assertHeadOfLine checks the order retries came back in. Blocked (one
// retry queue): E's 30 s retry returns only after A's 2-minute one, B's
// and C's only after A's 5-minute one. Not blocked (a queue per level):
// each 30 s retry returns before the long wait it was queued behind.
func assertHeadOfLine(t *testing.T, events []lab.Event, prefix string, blocked bool) {
	t.Helper()
	order := backOrder(events, prefix)
	pairs := [][2]string{{"A4", "E2"}, {"A5", "B2"}, {"A5", "C2"}} // {long one's return, short one's return}
	for _, p := range pairs {
		long, short := indexOf(order, prefix+p[0]), indexOf(order, prefix+p[1])
		require.True(t, long >= 0 && short >= 0, "%v in %v", p, order)
		if blocked {
			assert.Greater(t, short, long, "%s came back behind %s: only the head expires (order %v)", prefix+p[1], prefix+p[0], order)
		} else {
			assert.Less(t, short, long, "%s came back on time, before %s (order %v)", prefix+p[1], prefix+p[0], order)
		}
	}
}

// backOrder lists the attempts after a retry of run prefix in the order
// they started, as task+attempt ("A4").
func backOrder(events []lab.Event, prefix string) []string {
	var out []string
	for _, e := range labtest.OfKind(events, lab.Started) {
		if e.Attempt > 1 && strings.HasPrefix(e.Task, prefix) && len(e.Task) == len(prefix)+1 {
			out = append(out, e.Task+string(rune('0'+e.Attempt)))
		}
	}
	return out
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// In memory time is exact: each retry's lateness is what the FIFO makes
// it, to the millisecond, and the levels have none.
func TestQ14InMemoryLateness(t *testing.T) {
	_, res := lessontest.RunInMem(t, Lesson, lesson.Options{})
	late := map[string]string{}
	for _, r := range lessontest.TableTitled(t, res.Tables, "What happened to each retry").Rows {
		late[r[1]+"/"+r[2]] = r[6]
	}
	assert.Equal(t, "90 s (held back)", late["E/1"], "E's 30 s waited for A's 2 min")
	assert.Equal(t, "269 s (held back)", late["B/1"], "B's 30 s waited for A's 5 min, which went in 2 s (E's and B's attempts) before it")
	assert.Equal(t, "0 s", late["lB/1"], "its own level queue: on time")
	assert.Equal(t, "269 s (held back)", late["qB/1"], "memory's stand-in for the quorum queue is the same FIFO")
	held := map[string]string{}
	for _, r := range lessontest.TableTitled(t, res.Tables, "Head-of-line blocking").Rows {
		held[r[0]] = r[2]
	}
	assert.Equal(t, map[string]string{"one retry queue (classic)": "3", "a wait queue per level": "0", "one retry queue (quorum)": "3"}, held)
}

func TestTheSeedsArithmeticTable(t *testing.T) {
	tab := arithmeticTable()
	require.Len(t, tab.Rows, notify.MaxRetries)
	assert.Equal(t, []string{"1", "1", "retry queue, getRetryDelay(1) = 30s"}, tab.Rows[0], "the first retry already reads RETRY_DELAYS[1]")
	assert.Contains(t, tab.Rows[notify.MaxRetries-1][2], "email-dlq")
	assert.Contains(t, tab.Notes[0], "gives 4 retries")
}

func TestLevelTopology(t *testing.T) {
	top := levelTopology()
	require.NoError(t, top.Check())
	for _, d := range notify.Waits() {
		q, ok := top.Queue(levelQueue(d))
		require.True(t, ok, d)
		assert.Equal(t, d, q.TTL)
		assert.Equal(t, notify.EmailQueue, top.Settle(q.Name))
	}
	_, one := top.Queue(notify.RetryQueue)
	assert.False(t, one, "the levels replace the one retry queue")
	assert.Equal(t, "email-retry-queue.300s", levelQueue(5*time.Minute))
}

// The notice names both broker versions the quorum figure was measured
// on and says the TTL guide disagrees (issues 20 and 27).
func TestQ14NoticeSaysWhatWasMeasured(t *testing.T) {
	for _, notice := range []string{Lesson.Notice, Lesson.Notices[lab.InMem]} {
		assert.Contains(t, notice, "3.10.8")
		assert.Contains(t, notice, "4.3.6")
		assert.NotContains(t, notice, "not measured")
		assert.Contains(t, notice, "TTL guide")
	}
	assert.Contains(t, Lesson.Notice, "the docs and the brokers disagree")
}

// TestQ14QuorumHeadOfLineByVersion holds, on RabbitMQ 3.10.8 and on 4.3,
// that the quorum retry queue expires a message only at its head: B's and
// C's 30 s retries come back after A's 5-minute one (the order, not the
// clock), and the table says which broker measured it.
func TestQ14QuorumHeadOfLineByVersion(t *testing.T) {
	t.Parallel()
	for _, line := range []string{"3.10", "4.3"} {
		t.Run(line, func(t *testing.T) {
			t.Parallel()
			url, version := rabbittest.NeedVersion(t, line)
			events, res := lessontest.RunRabbit(t, Lesson, lesson.Options{Broker: url})
			labtest.AssertAccounted(t, events)
			assertHeadOfLine(t, events, "q", true)
			notes := strings.Join(lessontest.TableTitled(t, res.Tables, "Head-of-line blocking").Notes, " ")
			assert.Contains(t, notes, "Quorum queue measured on RabbitMQ "+version)
			assert.Contains(t, notes, "RabbitMQ "+version+" (this broker)")
		})
	}
}

// The log reads in the seed's numbers (issue 20): A's first retry is
// scheduled in 30 s and its last wait is 5 minutes of lesson time on the
// stamps, not the 300 ms and 3 s of a delay divided by 100.
func TestQ14LogShowsTheSeedsDelays(t *testing.T) {
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{})
	var style render.Style
	scheduled := labtest.Of(events, "A", lab.Scheduled)
	require.Len(t, scheduled, 4)
	assert.Contains(t, style.Line(scheduled[0]), "Scheduling retry in 30s via email-retry-queue")
	last := scheduled[3]
	assert.Contains(t, style.Line(last), "Scheduling retry in 300s")
	var back lab.Event
	for _, e := range labtest.Of(events, "A", lab.Started) {
		if e.Attempt == 5 {
			back = e
		}
	}
	assert.Equal(t, "03:34.000", render.Stamp(last.TMs), "A starts its 5-minute wait")
	assert.Equal(t, "08:34.000", render.Stamp(back.TMs), "and is back 5 minutes later")
	rows := lessontest.TableTitled(t, res.Tables, "What happened to each retry").Rows
	assert.Equal(t, []string{"one retry queue (classic)", "A", "1", "30 s", notify.RetryQueue, "30 s", "0 s"}, rows[0])
	assert.Equal(t, []string{"one retry queue (classic)", "A", "4", "300 s", notify.RetryQueue, "300 s", "0 s"}, rows[4])
}
