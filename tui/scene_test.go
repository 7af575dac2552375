package tui

import (
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTopologyInOrderOfFirstAppearanceWithDelays(t *testing.T) {
	sc := newScene(nil)
	s1 := ev(0, lab.Scheduled, "A", "main", "retry-1")
	s1.DelayMs = 1000
	s2 := ev(0, lab.Scheduled, "A", "retry-1", "retry-2")
	s2.DelayMs = 2000
	for i, e := range []lab.Event{
		ev(0, lab.Enqueued, "A", "main", ""), ev(0, lab.Started, "A", "main", ""), s1, s2,
		ev(0, lab.DeadLettered, "A", "retry-2", "dlq"), ev(0, lab.Moved, "A", "dlq", "main"),
	} {
		sc.apply(e, i)
	}
	var names []string
	for _, n := range sc.nodes {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{"main", "retry-1", "retry-2", "dlq"}, names)
	assert.Equal(t, []int64{1000}, sc.nodes[1].Delays)
	assert.Equal(t, []int64{2000}, sc.nodes[2].Delays)
}

func TestExplicitTopologyComesFirst(t *testing.T) {
	sc := newScene([]Node{{Name: "main"}, {Name: "wait", Delays: []int64{500}}, {Name: "dlq"}})
	sc.apply(ev(0, lab.Enqueued, "A", "dlq", ""), 0)
	sc.apply(ev(0, lab.Enqueued, "B", "extra", ""), 0)
	require.Len(t, sc.nodes, 4)
	assert.Equal(t, "dlq", sc.nodes[2].Name, "an explicit order is kept even if events name dlq first")
	assert.Equal(t, "extra", sc.nodes[3].Name, "queues it did not list are still shown")
}

func TestFatesFromEvents(t *testing.T) {
	sc := newScene(nil)
	for _, id := range []string{"A", "B", "C", "D", "E"} {
		sc.apply(ev(0, lab.Enqueued, id, "q", ""), 0)
	}
	sc.apply(ev(1, lab.Started, "A", "q", ""), 0)
	sc.apply(ev(2, lab.Succeeded, "A", "q", ""), 0)
	sc.apply(ev(3, lab.Dropped, "B", "q", ""), 0)
	sc.apply(ev(4, lab.Lost, "C", "q", ""), 0)
	sc.apply(ev(5, lab.Redelivered, "D", "other", ""), 0)
	sc.apply(lab.Event{Kind: lab.Summary, Task: "E", Fate: lab.FateLost}, 0)
	assert.Equal(t, []string{"A"}, sc.doneIDs)
	assert.Equal(t, []string{"B", "C", "E"}, sc.goneIDs)
	assert.Equal(t, 1, sc.dropped)
	assert.Equal(t, 2, sc.lost)
	assert.Equal(t, "other", sc.tokens["D"].queue, "a redelivery puts the task where the broker hands it out")
	assert.Equal(t, 1, sc.pending())
	assert.Empty(t, sc.members["q"], "nothing is left in q")
	assert.True(t, sc.finished)
}

func TestSilentHopIsAnimated(t *testing.T) {
	sc := newScene(nil)
	sc.apply(ev(0, lab.Enqueued, "A", "wait", ""), 0)
	sc.apply(ev(1000, lab.Started, "A", "main", ""), 3)
	tok := sc.tokens["A"]
	assert.Equal(t, "main", tok.queue)
	assert.True(t, tok.inTransit(3+moveFrames-1), "it travels wait → main")
	assert.False(t, tok.inTransit(3+moveFrames))
}

// On a broker the worker rejects a task into a wait queue the event names
// as its queue: the token counts down in that box (labelled with its TTL),
// and its next attempt shows the broker's hop onward. In memory the event's
// queue is where the task failed, and it counts down on its way to To.
func TestScheduledTaskWaitsInTheBrokersWaitQueue(t *testing.T) {
	sc := newScene(nil)
	wait := ev(100, lab.Scheduled, "C", "retry.wait", "retry.processing")
	wait.DelayMs = 1000
	for i, e := range []lab.Event{
		ev(0, lab.Enqueued, "C", "main", ""), ev(0, lab.Started, "C", "main", ""),
		ev(100, lab.Failed, "C", "main", ""), wait,
	} {
		sc.apply(e, i)
	}
	c := sc.tokens["C"]
	assert.Equal(t, "retry.wait", c.queue, "the rejected task sits in the wait queue")
	assert.Equal(t, delayed, c.status)
	assert.Equal(t, int64(1100), c.due)
	assert.Equal(t, []int64{1000}, sc.nodes[sc.index["retry.wait"]].Delays, "the wait queue carries the TTL")
	assert.Empty(t, sc.nodes[sc.index["retry.processing"]].Delays)

	sc.apply(ev(1100, lab.Started, "C", "retry.processing", ""), 10)
	assert.Equal(t, "retry.processing", c.queue, "the TTL expired: the broker moved it on")
	assert.True(t, c.moving, "and the hop is animated")

	mem := newScene(nil)
	timer := ev(100, lab.Scheduled, "C", "queue", "retryQueue")
	timer.DelayMs = 1000
	for i, e := range []lab.Event{ev(0, lab.Enqueued, "C", "queue", ""), ev(0, lab.Started, "C", "queue", ""), timer} {
		mem.apply(e, i)
	}
	assert.Equal(t, "retryQueue", mem.tokens["C"].queue, "in memory it waits on its way to retryQueue")
	assert.Equal(t, []int64{1000}, mem.nodes[mem.index["retryQueue"]].Delays)
}
