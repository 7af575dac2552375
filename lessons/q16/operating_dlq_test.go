package q16

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/render"
)

// TestQ16RabbitMQ runs the lesson on the broker: both overflow modes (and
// reject-publish-dlx), the seed's destructive read against the two that
// keep every message, and the replay without and with the counter reset.
func TestQ16RabbitMQ(t *testing.T) {
	t.Parallel() // beside the fault runs' private node
	events, res := lessontest.RunRabbit(t, Lesson, lesson.Options{})
	labtest.AssertAccounted(t, events)

	overflow := lessontest.TableTitled(t, res.Tables, "What x-overflow did")
	assert.Regexp(t, `\(RabbitMQ \d+\.\d+\.\d+\)$`, overflow.Title, "labelled with the version it was measured on (3.10 or 4.3)")
	assert.Equal(t, [][]string{
		{"drop-head (default)", "12 ack, 0 nack", "d01 (maxlen), d02 (maxlen)", "d03 … d12 (10)"},
		{"reject-publish", "10 ack, 2 nack", "none", "r01 … r10 (10)"},
		{"reject-publish-dlx", "10 ack, 2 nack", "x11 (maxlen), x12 (maxlen)", "x01 … x10 (10)"},
	}, overflow.Rows, "drop-head confirms all and dead-letters the oldest; reject-publish nacks the newest")
	// A nacked publish is refused, never enqueued; under reject-publish-dlx
	// the refused message is then dead-lettered, and nothing says it was
	// dropped with no copy kept.
	for _, id := range []string{"r11", "r12"} {
		fate, _ := labtest.Summary(t, events, id)
		assert.Equal(t, lab.FateRefused, fate, "%s was nacked and kept nowhere", id)
		assert.Equal(t, []lab.Kind{lab.Refused}, labtest.Kinds(events, id), id)
	}
	for _, id := range []string{"x11", "x12"} {
		fate, _ := labtest.Summary(t, events, id)
		assert.Equal(t, lab.FateDead, fate, "%s was nacked and dead-lettered", id)
		assert.Equal(t, []lab.Kind{lab.Refused, lab.DeadLettered}, labtest.Kinds(events, id), id)
		refused := labtest.Of(events, id, lab.Refused)[0]
		assert.NotContains(t, render.Style{}.Line(refused), "no copy", id)
	}
	assert.Equal(t, lab.Enqueued, labtest.Kinds(events, "d12")[0], "a confirmed publish is enqueued")

	inspect := lessontest.TableTitled(t, res.Tables, "Reading email-dlq")
	require.Len(t, inspect.Rows, 3)
	assert.Equal(t, "2 → 0", inspect.Rows[0][1], "ack_requeue_false removes what it shows")
	assert.Contains(t, inspect.Rows[1][0], "close the channel (ackmode ack_requeue_true", "the plugin requeues by closing its channel")
	assert.Contains(t, inspect.Rows[2][0], "basic.reject each with requeue (ackmode reject_requeue_true)")
	for _, row := range inspect.Rows[1:] {
		assert.Equal(t, "1 → 1", row[1], row[0])
		assert.Equal(t, "C: retries 4, x-death rejected", row[2], row[0])
		assert.Equal(t, "same; 1 of 1 marked redelivered", row[3], row[0])
	}
	for _, id := range []string{"d01", "d02"} {
		fate, _ := labtest.Summary(t, events, id)
		assert.Equal(t, lab.FateLost, fate, "%s was dead-lettered, then deleted by the seed's inspection: gone, not dropped on purpose", id)
		assert.Equal(t, lab.DeadLettered, labtest.Kinds(events, id)[1], id)
	}

	replay := lessontest.TableTitled(t, res.Tables, "Replaying email-dlq")
	assert.Equal(t, [][]string{
		{"as it is", "C", "retries 4", "failed", "straight back to email-dlq"},
		{"--reset-retries", "C", "retries 4 → 0", "failed", "one retry through email-retry-queue, then sent"},
	}, replay.Rows)
	fate, attempts := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateDone, fate)
	assert.Equal(t, 4, attempts, "parked, replayed and parked again, replayed with a reset, retried once")
	scheduled := labtest.Of(events, "C", lab.Scheduled)
	require.Len(t, scheduled, 1, "only the reset copy got a retry")
	assert.Equal(t, int64(30000), scheduled[0].DelayMs, "getRetryDelay(1): the seed's 30 s")
	for _, id := range []string{"A", "B", "D"} {
		fate, attempts := labtest.Summary(t, events, id)
		assert.Equal(t, lab.FateDone, fate, id)
		assert.Equal(t, 1, attempts, id)
	}
}

func TestQ16Notice(t *testing.T) {
	assert.Equal(t, lab.Rabbit, Lesson.DefaultBackend(), "a lesson about the broker runs there by default")
	assert.Nil(t, Lesson.InMem, "overflow, confirms and basic.get are the broker's: no in-memory variant")
	assert.Contains(t, Lesson.Notice, "ack_requeue_false")
	assert.Contains(t, Lesson.Notice, "maxlen")
}
