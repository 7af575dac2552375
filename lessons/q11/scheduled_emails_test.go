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
	"github.com/queuelab/qlab/seeds/mail"
)

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
		levels := mail.Levels()
		i := slices.IndexFunc(levels, func(l time.Duration) bool { return mail.LevelQueue(l) == e.To })
		require.GreaterOrEqual(t, i, 0, "%s waits in %s, which is not one of the levels", id, e.To)
		hops = append(hops, levels[i])
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
	// The order of a "past" mail and a 1 s one is not asserted: 1 s is
	// 333 ms real here, less than a loaded machine can add to the overdue
	// mail's way to the mailer (both cores busy: c-past went out 6 ms
	// after c-1s). An overdue mail never waits, and mails due seconds
	// apart go out in due order.

	// (b) Head-of-line: b-1s's own expiration is 1 s, yet it comes out of
	// mail.delay only after b-5s (RabbitMQ expires only the head).
	q11DueInFuture(t, events, "b-5s", "b-1s")
	assert.GreaterOrEqual(t, labtest.FirstAt(t, events, lab.Started, "b-1s"), labtest.FirstAt(t, events, lab.Started, "b-5s"), "expiry in queue order")
	q11SentInOrder(t, events, "b-past", "b-5s")

	// (c) Fixed levels: each mail waits in hops of the configured levels,
	// which never overshoot its due time by more than half the shortest
	// level (each hop is picked from the time left, and a TTL is never
	// early), and the mails go out in due order, c-5s across the restart.
	half := mail.Levels()[len(mail.Levels())-1] / 2
	for _, m := range q11Schedule {
		id, sum := "c-"+m.suffix, time.Duration(0)
		for _, h := range q11Hops(t, events, id) {
			sum += h
		}
		assert.LessOrEqual(t, sum, max(m.in, 0)+half, "%s's hops do not overshoot its due time", id)
	}
	assert.Equal(t, []time.Duration{4 * time.Second}, q11Hops(t, events, "c-5s")[:1], "c-5s's first hop is the longest level under 5 s")
	assert.Empty(t, q11Hops(t, events, "c-past"))
	q11SentInOrder(t, events, "c-1s", "c-5s")
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
	assert.Contains(t, actors, mail.RouterActor+"-2", "the restarted scheduler routed c-5s")
	assert.NotContains(t, actors, mail.RouterActor+"-1", "the first router never saw c-5s: it was still waiting at the restart")

	// The tables: one per strategy and the comparison.
	require.Len(t, res.Tables, 4)
	cmp := res.Tables[3]
	require.Len(t, cmp.Rows, 3)
	assert.Equal(t, []string{"2", "1"}, cmp.Rows[0][1:3], "(a) sent 2, lost 1")
	assert.Equal(t, []string{"3", "0"}, cmp.Rows[1][1:3], "(b) sent all")
	assert.Equal(t, []string{"3", "0"}, cmp.Rows[2][1:3], "(c) sent all")
	assert.Contains(t, cmp.Notes[len(cmp.Notes)-1], q11BadRequest, "the bad request was refused")
}
