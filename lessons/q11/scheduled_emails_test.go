package q11

import (
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

// q11TestSpeed runs the lesson three times faster than real time: the
// effect the test checks (b-1s is 4 s late) stays far above the slack.
const q11TestSpeed = 3

// q11Tolerance is how far from its due time a mail may go out and still
// count as on time, in lesson ms: realSlackMs of real latency.
// realSlackMs is how late, in real milliseconds, a broker hop may be on a
// shared and loaded 2-core machine.
const realSlackMs = 250

const q11Tolerance = realSlackMs * q11TestSpeed

// q11Due is a mail's due lesson time read from the events: the scheduled
// event's stamp plus its delay, or the request itself (enqueued) for a mail
// that was due already.
func q11Due(t *testing.T, events []lab.Event, id string) int64 {
	t.Helper()
	for _, e := range events {
		if e.Task == id && e.Kind == lab.Scheduled {
			return e.TMs + e.DelayMs
		}
	}
	return labtest.FirstAt(t, events, lab.Enqueued, id)
}

// q11Late is how late the mail id went out (succeeded minus due).
func q11Late(t *testing.T, events []lab.Event, id string) int64 {
	t.Helper()
	return labtest.FirstAt(t, events, lab.Succeeded, id) - q11Due(t, events, id)
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
			assert.Contains(t, labtest.Kinds(events, id), lab.Alerted, "%s: the mock mailer sent it", id)
		}
	}

	// (a) The timer held a-5s when the scheduler stopped: lost, never sent.
	fate, attempts := labtest.Summary(t, events, "a-5s")
	assert.Equal(t, lab.FateLost, fate)
	assert.Equal(t, 0, attempts)
	assert.Equal(t, []lab.Kind{lab.Enqueued, lab.Scheduled, lab.Lost}, labtest.Kinds(events, "a-5s"))
	lostAt := labtest.FirstAt(t, events, lab.Lost, "a-5s")
	assert.Less(t, lostAt, q11Due(t, events, "a-5s"), "lost before it was due")
	assert.InDelta(t, labtest.FirstAt(t, events, lab.Enqueued, "a-5s")+q11TimerStop.Milliseconds(), lostAt, q11Tolerance, "at the stop")
	for _, id := range []string{"a-1s", "a-past"} {
		assert.InDelta(t, 0, q11Late(t, events, id), q11Tolerance, "%s goes out on time while the scheduler runs", id)
	}

	// (b) Head-of-line: b-1s comes out of mail.delay only behind b-5s,
	// about 4 s late; b-5s itself is on time.
	// Order and configured delays only: how late the broker is under load
	// is measured (README), not asserted.
	assert.GreaterOrEqual(t, q11Late(t, events, "b-1s"), 4000-int64(q11Tolerance), "b-1s waits behind b-5s")
	assert.GreaterOrEqual(t, q11Due(t, events, "b-1s")+q11Late(t, events, "b-1s"), q11Due(t, events, "b-5s")+q11Late(t, events, "b-5s"),
		"b-1s goes out no earlier than b-5s")
	assert.GreaterOrEqual(t, q11Late(t, events, "b-5s"), -int64(q11Tolerance), "b-5s is not sent early")
	assert.GreaterOrEqual(t, q11Late(t, events, "b-past"), -int64(q11Tolerance))
	assert.GreaterOrEqual(t, labtest.FirstAt(t, events, lab.Started, "b-1s"), labtest.FirstAt(t, events, lab.Started, "b-5s"), "expiry in queue order")

	// (c) Every mail on time, the 5 s one across the scheduler restart:
	// the first scheduler sent it on its first hop, the second one's
	// router moved it on after the old connection was gone.
	for _, id := range []string{"c-5s", "c-1s", "c-past"} {
		late := q11Late(t, events, id)
		assert.GreaterOrEqual(t, late, -delayLevels[len(delayLevels)-1].Milliseconds()/2-q11TestSpeed, id)
		assert.LessOrEqual(t, late, int64(q11Tolerance), id)
	}
	var actors []string
	for _, e := range events {
		if e.Task == "c-5s" && (e.Kind == lab.Scheduled || e.Kind == lab.Moved) {
			actors = append(actors, e.Actor)
			assert.Contains(t, e.To, "mail.", "c-5s waits in the lesson's queues")
		}
	}
	require.NotEmpty(t, actors)
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
