package q09

import (
	"testing"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQ09DLQAlert(t *testing.T) {
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{})

	alerts := labtest.OfKind(events, lab.Alerted)
	require.Len(t, alerts, 1)
	a := alerts[0]
	assert.Equal(t, "C", a.Task)
	assert.Equal(t, "MockEmailService", a.Actor)
	assert.Contains(t, a.Note, "To: admin@example.com")
	assert.Contains(t, a.Note, "Subject: DLQ Alert: Task Failed")
	assert.Contains(t, a.Note, "Body: The following task failed all retries: C")
	// The DLQ-Worker receives C as it reaches the DLQ and starts sending at once.
	assert.Equal(t, labtest.FirstAt(t, events, lab.DeadLettered, "C"), labtest.FirstAt(t, events, lab.Received, "C"))
	assert.Equal(t, labtest.FirstAt(t, events, lab.DeadLettered, "C"), a.TMs)

	fate, attempts := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateDead, fate)
	assert.Equal(t, 3, attempts, "alerting is not another processing attempt")
}

// Two poison tasks: while the DLQ-Worker is still mailing about C, the
// Second-Retry-Worker retries E and dead-letters it. Had the retry worker
// sent the mail itself, E's retry would wait for the mail.
func TestQ09MailingNeverBlocksTheRetryWorker(t *testing.T) {
	plan := lab.Plan{Tasks: []string{"A", "B", "C", "D", "E"}, Poison: []string{"C", "E"}, Work: 100 * time.Millisecond}
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{Plan: &plan})

	deadC := labtest.FirstAt(t, events, lab.DeadLettered, "C")
	alertC := labtest.FirstAt(t, events, lab.Alerted, "C")
	retryE := labtest.Find(t, events, lab.Started, "E", 3).TMs
	deadE := labtest.FirstAt(t, events, lab.DeadLettered, "E")

	assert.Equal(t, int64(3500), deadC)
	assert.Equal(t, int64(3500), alertC, "C's mail starts as C arrives, and takes 500 ms")
	// E's last retry runs inside C's mailing window, on schedule: it was
	// scheduled at 1600 with a 2 s wait.
	assert.Equal(t, int64(3600), retryE)
	assert.Equal(t, int64(3700), deadE)
	assert.Less(t, deadE, alertC+MailLatency.Milliseconds(), "E was dead-lettered while C's alert was still being sent")
	// The DLQ-Worker mails one task after the other.
	assert.Equal(t, alertC+MailLatency.Milliseconds(), labtest.FirstAt(t, events, lab.Alerted, "E"))
	for _, id := range []string{"C", "E"} {
		fate, _ := labtest.Summary(t, events, id)
		assert.Equal(t, lab.FateDead, fate, id)
	}
}

// The scenario the lesson's notice points to: --fail-rate 0.5 --seed 3.
func TestQ09NoticeScenario(t *testing.T) {
	plan := lab.DefaultPlan()
	plan.FailRate, plan.Seed = 0.5, 3
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{Plan: &plan})

	alertC := labtest.FirstAt(t, events, lab.Alerted, "C")
	assert.LessOrEqual(t, labtest.FirstAt(t, events, lab.DeadLettered, "C"), labtest.Find(t, events, lab.Started, "D", 3).TMs)
	assert.Less(t, labtest.FirstAt(t, events, lab.DeadLettered, "D"), alertC+MailLatency.Milliseconds(),
		"D is retried and dead-lettered while C's alert is being sent")
}

// The lesson shows the decoupling without flags: its table runs both
// designs on two poison tasks, and mailing in the retry worker makes E's
// last retry wait for C's mail (issue 20).
func TestQ09TableShowsTheRetryThatWaits(t *testing.T) {
	_, res := lessontest.RunInMem(t, Lesson, lesson.Options{})
	tb := lessontest.TableTitled(t, res.Tables, "Who sends the alert")
	require.Len(t, tb.Rows, 2)
	inline, worker := tb.Rows[0], tb.Rows[1]
	assert.Equal(t, []string{"00:03.600", "00:04.000", "400 ms", "1000 ms"}, inline[1:], "E's retry waits for C's 500 ms mail")
	assert.Equal(t, []string{"00:03.600", "00:03.600", "0 ms", "0 ms"}, worker[1:], "with a DLQ-Worker it starts on time")
	assert.NotContains(t, Lesson.Notice, "--fail-rate", "the notice needs no flags")
}
