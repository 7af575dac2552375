package q11

import (
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
)

func TestQ11ParseScheduledTime(t *testing.T) {
	athens := time.FixedZone("EET", 2*60*60)
	now := time.Date(2026, 2, 8, 13, 39, 41, 0, athens) // 11:39:41Z
	at := func(s string) time.Time {
		d, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return d
	}
	valid := []struct {
		in    string
		due   time.Time
		delay time.Duration
	}{
		{"2026-02-08T11:39:51Z", at("2026-02-08T11:39:51Z"), 10 * time.Second},
		{"2026-02-08T13:39:51+02:00", at("2026-02-08T11:39:51Z"), 10 * time.Second},
		{"2026-02-08T06:39:51-05:00", at("2026-02-08T11:39:51Z"), 10 * time.Second},
		{"2026-02-08T11:39:41.250Z", at("2026-02-08T11:39:41.25Z"), 250 * time.Millisecond},
		{"2026-02-08T13:39:51", at("2026-02-08T11:39:51Z"), 10 * time.Second},           // the seed's LocalDateTime: now's zone
		{"2026-02-08T13:39:41.5", at("2026-02-08T11:39:41.5Z"), 500 * time.Millisecond}, // with a fraction
		{"2026-02-08T11:39:41Z", at("2026-02-08T11:39:41Z"), 0},                         // due right now
		{"2026-02-08T11:00:00Z", at("2026-02-08T11:00:00Z"), 0},                         // in the past: send at once
		{"2025-12-31T23:59:59Z", at("2025-12-31T23:59:59Z"), 0},
	}
	for _, c := range valid {
		due, delay, err := parseScheduledTime(c.in, now)
		require.NoError(t, err, c.in)
		assert.True(t, c.due.Equal(due), "%s: due %v, want %v", c.in, due, c.due)
		assert.Equal(t, c.delay, delay, c.in)
	}
	invalid := []string{
		"", "next tuesday 9am", "2026-02-08", "11:39:51", "2026-02-08 11:39:51",
		"2026-02-30T10:00:00Z", "2026-02-08T25:00:00Z", "2026-02-08T11:39:51 Z", "1707392391",
	}
	for _, in := range invalid {
		_, _, err := parseScheduledTime(in, now)
		require.Error(t, err, in)
		assert.ErrorIs(t, err, errScheduledTime, in)
		assert.Contains(t, err.Error(), `"`+in+`"`, "the error quotes the input")
		assert.Contains(t, err.Error(), "2026-02-08T11:39:51Z", "the error shows a valid example")
		assert.NotContains(t, err.Error(), "\n", "one line")
	}
}

func TestQ11NextLevel(t *testing.T) {
	cases := []struct {
		remaining time.Duration
		level     time.Duration
		ok        bool
	}{
		{20 * time.Second, 8 * time.Second, true},
		{5 * time.Second, 4 * time.Second, true},
		{time.Second, time.Second, true},
		{942 * time.Millisecond, time.Second, true}, // 58 ms late beats 3 more hops
		{900 * time.Millisecond, 500 * time.Millisecond, true},
		{130 * time.Millisecond, 125 * time.Millisecond, true},
		{70 * time.Millisecond, 125 * time.Millisecond, true},
		{62 * time.Millisecond, 0, false}, // closer than half the shortest level: send now
		{0, 0, false},
		{-time.Second, 0, false}, // overdue
	}
	for _, c := range cases {
		level, ok := nextLevel(c.remaining)
		assert.Equal(t, c.ok, ok, "%v", c.remaining)
		assert.Equal(t, c.level, level, "%v", c.remaining)
	}
	assert.Equal(t, "mail.wait.4s", levelQueue(4*time.Second))
	assert.Equal(t, "mail.wait.125ms", levelQueue(125*time.Millisecond))
	assert.Equal(t, "mail.wait.1_5s", levelQueue(1500*time.Millisecond))
}

// TestQ11LevelsComposeAnyDelay hops every delay up to 20 s (in 7 ms steps)
// through the levels as an ideal broker would: each lands within half the
// shortest level of its due time, in few hops.
func TestQ11LevelsComposeAnyDelay(t *testing.T) {
	half := delayLevels[len(delayLevels)-1] / 2
	for d := time.Duration(0); d <= 20*time.Second; d += 7 * time.Millisecond {
		var waited time.Duration
		hops := 0
		for {
			level, ok := nextLevel(d - waited)
			if !ok {
				break
			}
			waited += level
			hops++
			require.LessOrEqual(t, hops, 12, "delay %v", d)
		}
		assert.InDelta(t, float64(d), float64(waited), float64(half), "delay %v waited %v", d, waited)
	}
}

// q11TestSpeed runs the lesson three times faster than real time: its
// shortest TTL (125 ms) is still 40 ms of real time.
const q11TestSpeed = 3

// q11Scheduled is the delay the scheduler set for mail id: its due time
// minus the moment it was scheduled, in lesson ms (0 if never scheduled).
func q11Scheduled(events []lab.Event, id string) int64 {
	for _, e := range events {
		if e.Task == id && e.Kind == lab.Scheduled {
			return e.DelayMs
		}
	}
	return 0
}

// q11Hops is the delay level of each wait queue mail id was sent to
// (strategy c), in order; it fails on a wait queue that is not a level.
func q11Hops(t *testing.T, events []lab.Event, id string) []time.Duration {
	t.Helper()
	var hops []time.Duration
	for _, e := range events {
		if e.Task != id || (e.Kind != lab.Scheduled && e.Kind != lab.Moved) || !strings.HasPrefix(e.To, "mail.wait.") {
			continue
		}
		i := slices.IndexFunc(delayLevels, func(l time.Duration) bool { return levelQueue(l) == e.To })
		require.GreaterOrEqual(t, i, 0, "%s waits in %s, which is not one of the levels", id, e.To)
		hops = append(hops, delayLevels[i])
	}
	return hops
}

// q11DueInFuture asserts each mail was scheduled with a delay up to its
// configured one (the schedule's, less the moments since its request).
func q11DueInFuture(t *testing.T, events []lab.Event, ids ...string) {
	t.Helper()
	for _, id := range ids {
		in := int64(0)
		for _, m := range q11Schedule {
			if strings.HasSuffix(id, "-"+m.suffix) {
				in = m.in.Milliseconds()
			}
		}
		d := q11Scheduled(events, id)
		assert.Positive(t, d, "%s was due in the future", id)
		assert.LessOrEqual(t, d, in, "%s: at most its configured %d ms", id, in)
	}
}

// q11SentInOrder asserts the mails went out (succeeded) in the order of ids.
func q11SentInOrder(t *testing.T, events []lab.Event, ids ...string) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		assert.Less(t, labtest.FirstAt(t, events, lab.Succeeded, ids[i-1]), labtest.FirstAt(t, events, lab.Succeeded, ids[i]),
			"%s goes out before %s", ids[i-1], ids[i])
	}
}

func TestQ11ScheduledEmailsRabbitMQ(t *testing.T) {
	events, res := lessontest.RunRabbit(t, Lesson, lesson.Options{Speed: q11TestSpeed})
	labtest.AssertAccounted(t, events)

	// Every mail of every strategy has its summary.
	for _, s := range []string{"a", "b", "c"} {
		for _, m := range q11Schedule {
			id := s + "-" + m.suffix
			fate, attempts := labtest.Summary(t, events, id)
			if id == "a-5s" {
				continue // checked below
			}
			assert.Equal(t, lab.FateDone, fate, id)
			assert.Equal(t, 1, attempts, id)
			assert.Contains(t, labtest.Kinds(events, id), lab.Mailed, "%s: the mock mailer sent it to the customer", id)
			assert.NotContains(t, labtest.Kinds(events, id), lab.Alerted, "%s: a customer's mail is no alert", id)
		}
	}

	// (a) The timer held a-5s when the scheduler stopped: lost, never sent.
	fate, attempts := labtest.Summary(t, events, "a-5s")
	assert.Equal(t, lab.FateLost, fate)
	assert.Equal(t, 0, attempts)
	assert.Equal(t, []lab.Kind{lab.Enqueued, lab.Scheduled, lab.Lost}, labtest.Kinds(events, "a-5s"))
	q11DueInFuture(t, events, "a-5s", "a-1s")
	assert.Zero(t, q11Scheduled(events, "a-past"), "an overdue mail goes out at once")
	q11SentInOrder(t, events, "a-past", "a-1s")

	// (b) Head-of-line: b-1s's own expiration is 1 s, yet it comes out of
	// mail.delay only after b-5s (RabbitMQ expires only the head).
	q11DueInFuture(t, events, "b-5s", "b-1s")
	assert.GreaterOrEqual(t, labtest.FirstAt(t, events, lab.Started, "b-1s"), labtest.FirstAt(t, events, lab.Started, "b-5s"), "expiry in queue order")
	q11SentInOrder(t, events, "b-past", "b-5s")

	// (c) Fixed levels: each mail waits in hops of the configured levels,
	// which never overshoot its due time by more than half the shortest
	// level (each hop is picked from the time left, and a TTL is never
	// early), and the mails go out in due order, c-5s across the restart.
	half := delayLevels[len(delayLevels)-1] / 2
	for _, m := range q11Schedule {
		id, sum := "c-"+m.suffix, time.Duration(0)
		for _, h := range q11Hops(t, events, id) {
			sum += h
		}
		assert.LessOrEqual(t, sum, max(m.in, 0)+half, "%s's hops do not overshoot its due time", id)
	}
	assert.Equal(t, []time.Duration{4 * time.Second}, q11Hops(t, events, "c-5s")[:1], "c-5s's first hop is the longest level under 5 s")
	assert.Empty(t, q11Hops(t, events, "c-past"))
	q11SentInOrder(t, events, "c-past", "c-1s", "c-5s")
	var actors []string
	for _, e := range events {
		if e.Task == "c-5s" && (e.Kind == lab.Scheduled || e.Kind == lab.Moved) {
			actors = append(actors, e.Actor)
			assert.Contains(t, e.To, "mail.", "c-5s waits in the lesson's queues")
		}
	}
	require.NotEmpty(t, actors)
	first := labtest.Of(events, "c-5s", lab.Scheduled)[0]
	assert.Contains(t, first.Note, "travels in header qlab-scheduled-time",
		"the lab's own header has no x- prefix: RabbitMQ treats x- headers as the broker's (Q13)")
	assert.Equal(t, q11LevelSched+"-1", actors[0])
	assert.Contains(t, actors, q11LevelRouter+"-2", "the restarted scheduler routed c-5s")
	assert.NotContains(t, actors, q11LevelRouter+"-1", "the first router never saw c-5s: it was still waiting at the restart")

	// The tables: one per strategy and the comparison.
	require.Len(t, res.Tables, 4)
	cmp := res.Tables[3]
	require.Len(t, cmp.Rows, 3)
	assert.Equal(t, []string{"2", "1"}, cmp.Rows[0][1:3], "(a) sent 2, lost 1")
	assert.Equal(t, []string{"3", "0"}, cmp.Rows[1][1:3], "(b) sent all")
	assert.Equal(t, []string{"3", "0"}, cmp.Rows[2][1:3], "(c) sent all")
	assert.Contains(t, cmp.Notes[len(cmp.Notes)-1], q11BadRequest, "the bad request was refused")
}
