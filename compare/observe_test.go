package compare

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/render"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoParts is a run in two parts of 50 s each, sampled every 250 ms: each
// part declared (and the sampler watched) the same two queues.
func twoParts(backend lab.Backend) (Side, []lesson.Series) {
	s := Side{Backend: backend, Speed: 20, Events: []lab.Event{
		{TMs: 0, Kind: lab.Phase, Note: "Run 1 (n01…): without a breaker"},
		{TMs: 50_000, Kind: lab.Phase, Note: "Run 2 (b01…): with a breaker"},
		{TMs: 100_000, Kind: lab.Summary, Task: "b01"},
	}}
	series := func(n int) []int {
		x := make([]int, n)
		x[n/4] = 3
		return x
	}
	return s, []lesson.Series{
		{Queue: "email_queue", Samples: series(400)}, {Queue: "email_queue_wait", Samples: series(400)},
		{Queue: "email_queue", Samples: series(200)}, {Queue: "email_queue_wait", Samples: series(200)},
	}
}

func TestObservabilityLabelsPartsAndFitsASlide(t *testing.T) {
	a, da := twoParts(lab.InMem)
	b, db := twoParts(lab.Rabbit)
	tab := ObservabilityTable([2]Side{a, b}, [2][]lesson.Series{da, db}, sampleEvery)
	assert.Equal(t, []string{"backend", "part", "queue", "peak", "depth over time"}, tab.Header)
	require.Len(t, tab.Rows, 8)
	assert.Equal(t, []string{"inmem", "1", "email_queue"}, tab.Rows[0][:3])
	assert.Equal(t, []string{"inmem", "2", "email_queue"}, tab.Rows[2][:3])
	for _, r := range tab.Rows {
		assert.LessOrEqual(t, utf8.RuneCountInString(r[4]), sparkWidth, "sparkline of %v", r[:3])
		assert.Equal(t, "3", r[3], "grouping keeps the peak")
	}
	// Part 1's series is trimmed to part 1's 50 s: 200 samples, not 400.
	assert.Equal(t, utf8.RuneCountInString(tab.Rows[2][4]), utf8.RuneCountInString(tab.Rows[0][4]))
	assert.Contains(t, tab.Notes, "part 2: Run 2 (b01…): with a breaker")
	assertFits(t, tab)
}

func TestSetupListsEachQueueOnce(t *testing.T) {
	b, series := twoParts(lab.Rabbit)
	tab := setupTable(Config{BrokerInfo: "RabbitMQ 3.10.8 at amqp://guest:xxxxx@127.0.0.1:5672/"}, b, series)
	text := ""
	for _, r := range tab.Rows {
		text += strings.Join(r, " ") + "\n"
	}
	assert.Contains(t, text, "2 durable queues with their TTL and dead-letter arguments, declared in each of 2 parts:")
	assert.Equal(t, 1, strings.Count(text, "email_queue,"), text)
	assertFits(t, tab)
}

func TestPersistenceTableCountsTheMedianOfTheRuns(t *testing.T) {
	// run gives task A, B, … the final event of each kind.
	run := func(b lab.Backend, ends ...lab.Kind) Side {
		s := Side{Backend: b, InterruptedAt: interruptAt}
		for i, k := range ends {
			id := string(rune('A' + i))
			s.Events = append(s.Events, lab.Event{Kind: lab.Enqueued, Task: id}, lab.Event{Kind: k, Task: id})
		}
		return s
	}
	inmem := []Side{run(lab.InMem, lab.Lost, lab.Succeeded), run(lab.InMem, lab.Lost, lab.Lost), run(lab.InMem, lab.Lost, lab.Succeeded)}
	broker := []Side{run(lab.Rabbit, lab.Succeeded, lab.DeadLettered)}
	tab := PersistenceTable(inmem, broker, interruptAt)
	assert.Equal(t, []string{"inmem", "process crashed", "2", "1 [1–2]", "1 [0–1]", "0", "0"}, tab.Rows[0])
	assert.Equal(t, []string{"rabbit", "consumer connections cut", "2", "0", "1", "1", "0"}, tab.Rows[1])
	assert.NotContains(t, tab.Title, "process dies")
	assert.Contains(t, strings.Join(tab.Notes, " "), "broker restart")
	assertFits(t, tab)
}

// slideWidth is what an instructor's slide holds.
const slideWidth = 100

// assertFits renders a table as text and checks every line fits a slide.
func assertFits(t *testing.T, tab render.Table) {
	t.Helper()
	var b strings.Builder
	tab.Write(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), slideWidth, "%q", line)
	}
}

// The persistence row counts only the tasks the interruption found: a
// task the broker run published after it (in memory the crashed process
// published none) is no part of either side (issue 20: compare 14 counted
// 3 tasks in memory against 5, compare 12 "19 of 20 lost"). The
// interruption is the run's own: here the broker run's set-up took 1 s
// of lesson time before its workers started and armed it, and A,
// published then, is still counted (counted up to a fixed lesson time,
// it was not: 0 against 3 on a busy machine).
func TestPersistenceTableCountsTheTasksTheInterruptionFound(t *testing.T) {
	at := interruptAt.Milliseconds()
	inmem := Side{Backend: lab.InMem, InterruptedAt: interruptAt, Events: []lab.Event{
		{Kind: lab.Enqueued, Task: "A"}, {Kind: lab.Lost, Task: "A", TMs: at},
	}}
	const setUp = 1000
	broker := Side{Backend: lab.Rabbit, InterruptedAt: interruptAt + setUp*time.Millisecond, Events: []lab.Event{
		{Kind: lab.Enqueued, Task: "A", TMs: setUp}, {Kind: lab.Succeeded, Task: "A", TMs: setUp + at + 100},
		{Kind: lab.Enqueued, Task: "B", TMs: setUp + at + 500}, {Kind: lab.Succeeded, Task: "B", TMs: setUp + at + 600},
	}}
	tab := PersistenceTable([]Side{inmem}, []Side{broker}, interruptAt)
	assert.Equal(t, []string{"inmem", "process crashed", "1", "1", "0", "0", "0"}, tab.Rows[0])
	assert.Equal(t, []string{"rabbit", "consumer connections cut", "1", "0", "1", "0", "0"}, tab.Rows[1], "B came after the interruption")
	assert.Contains(t, strings.Join(tab.Notes, " "), "enqueued before the interruption")
	assertFits(t, tab)
}
