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
	assert.Equal(t, []string{"main", timerNode, "retry-1", "retry-2", "dlq"}, names, "in memory the timers box sits where the first wait starts")
	assert.Equal(t, []int64{1000, 2000}, sc.nodes[1].Delays, "the timers box lists every delay")
}

// The scene follows the ledger: a task its DLQ hands out again (an ack
// lost with a connection) stays dead; one handed out again where it was
// dead-lettered from (the reject lost) is pending again.
func TestARedeliveryInItsDLQKeepsATaskDead(t *testing.T) {
	sc := newScene(nil)
	for _, id := range []string{"A", "B"} {
		sc.apply(ev(0, lab.Enqueued, id, "q", ""), 0)
		sc.apply(ev(1, lab.DeadLettered, id, "q", "dlq"), 0)
	}
	sc.apply(ev(2, lab.Received, "A", "dlq", ""), 0)
	sc.apply(ev(3, lab.Redelivered, "A", "dlq", ""), 0)
	sc.apply(ev(4, lab.Redelivered, "B", "q", ""), 0)
	assert.Equal(t, lab.FateDead, sc.tokens["A"].fate)
	assert.Equal(t, dead, sc.tokens["A"].status)
	assert.Equal(t, lab.FatePending, sc.tokens["B"].fate)
	assert.Equal(t, 1, sc.count[lab.FateDead])
	assert.Equal(t, 1, sc.pending())
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
	assert.Equal(t, []string{"A"}, sc.doneIDs.ids)
	assert.Equal(t, []string{"B", "C", "E"}, sc.goneIDs.ids)
	assert.Equal(t, 1, sc.count[lab.FateDropped])
	assert.Equal(t, 2, sc.count[lab.FateLost])
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
	assert.False(t, tok.inTransit(3), "a worker has it: it is in main, not on the lane")
	require.Len(t, sc.movers, 1)
	assert.True(t, sc.movers[0].trail, "the hop wait → main is drawn as a trail")
	assert.Equal(t, [2]string{"wait", "main"}, [2]string{sc.movers[0].from, sc.movers[0].to})
	assert.True(t, sc.prune(3+moveFrames-1))
	assert.False(t, sc.prune(3+moveFrames))
}

// On a broker a scheduled task waits in the wait queue the event names
// (Via), labelled with its TTL, and moves on to To when the TTL expires.
// In memory no queue holds it: it waits in the timers box (a time.AfterFunc
// in the process's memory), and moves on to To when the timer fires.
func TestScheduledTaskWaitsWhereTheBackendKeepsIt(t *testing.T) {
	for _, c := range []struct {
		backend lab.Backend
		box     string
	}{{lab.Rabbit, "retry.wait"}, {lab.InMem, timerNode}} {
		t.Run(string(c.backend), func(t *testing.T) {
			sc := newScene(nil)
			wait := ev(100, lab.Scheduled, "C", "main", "retry.processing")
			wait.Via, wait.DelayMs = "retry.wait", 1000
			for i, e := range []lab.Event{
				ev(0, lab.Enqueued, "C", "main", ""), ev(0, lab.Started, "C", "main", ""),
				ev(100, lab.Failed, "C", "main", ""), wait,
			} {
				e.Backend = c.backend
				sc.apply(e, i)
			}
			tok := sc.tokens["C"]
			assert.Equal(t, c.box, tok.queue)
			assert.Equal(t, delayed, tok.status)
			assert.Equal(t, int64(1100), tok.due)
			assert.Equal(t, []int64{1000}, sc.nodes[sc.index[c.box]].Delays, "the box carries the wait")
			assert.Empty(t, sc.nodes[sc.index["retry.processing"]].Delays)
			_, hasWaitQueue := sc.index["retry.wait"]
			assert.Equal(t, c.backend == lab.Rabbit, hasWaitQueue, "a wait queue box only where a wait queue exists")

			sc.advance(1099, 10)
			assert.Equal(t, c.box, tok.queue, "not due yet")
			sc.advance(1100, 11)
			assert.Equal(t, "retry.processing", tok.queue, "due: the timer or the TTL sent it on")
			assert.True(t, tok.inTransit(11), "and the hop is animated")

			sc.apply(ev(1100, lab.Started, "C", "retry.processing", ""), 12)
			assert.Equal(t, working, tok.status)
			assert.False(t, tok.inTransit(12), "a worker has it: drawn in the box, not on the lane")
		})
	}
}

// A broker lesson that names no wait queue (Q11's schedulers) parks the
// task in To itself, where it counts down; it stays until an event moves it.
func TestScheduledWithoutWaitQueueOnBrokerWaitsInTo(t *testing.T) {
	sc := newScene(nil)
	s := ev(0, lab.Scheduled, "c-5s", "", "mail.wait.4s")
	s.Backend, s.DelayMs = lab.Rabbit, 4999
	sc.apply(ev(0, lab.Enqueued, "c-5s", "", ""), 0)
	sc.apply(s, 0)
	assert.Equal(t, "mail.wait.4s", sc.tokens["c-5s"].queue)
	assert.Empty(t, sc.nodes[sc.index["mail.wait.4s"]].Delays, "a mail's delay is not the queue's TTL")
	sc.advance(10_000, 5)
	assert.Equal(t, "mail.wait.4s", sc.tokens["c-5s"].queue)
}

// Q01: C goes back to the tail and a worker takes it again at once; it is
// then in the box being worked on, not still drawn on the lane.
func TestStartedEndsTheTokensJourney(t *testing.T) {
	sc := newScene(nil)
	for i, e := range []lab.Event{
		ev(0, lab.Enqueued, "C", "queue", ""), ev(0, lab.Started, "C", "queue", ""),
		ev(100, lab.Failed, "C", "queue", ""), ev(100, lab.Moved, "C", "queue", "queue"),
	} {
		sc.apply(e, i)
	}
	require.True(t, sc.tokens["C"].inTransit(4))
	sc.apply(ev(100, lab.Started, "C", "queue", ""), 4)
	assert.False(t, sc.tokens["C"].inTransit(4))
	assert.False(t, sc.prune(4), "no animation left to draw")
}

// Q06: every ack is lost after a successful send, so each task is
// delivered again; the second delivery is a duplicate the idempotency check
// skips. The tally must end where the ledger does: four done, none pending.
func TestQ06TallyCountsEachTaskOnce(t *testing.T) {
	sc := newScene(nil)
	ids := []string{"A", "B", "C", "D"}
	for _, id := range ids {
		sc.apply(ev(0, lab.Enqueued, id, "queue", ""), 0)
	}
	for _, id := range ids {
		sc.apply(ev(0, lab.Started, id, "queue", ""), 0)
		sc.apply(ev(0, lab.Succeeded, id, "queue", ""), 0)
		sc.apply(ev(0, lab.Redelivered, id, "queue", ""), 0)
	}
	assert.Equal(t, 4, sc.pending(), "redelivered: back in the queue, not done")
	sc.apply(ev(0, lab.Started, "A", "queue", ""), 0)
	sc.apply(ev(0, lab.Succeeded, "A", "queue", ""), 0) // the guard that failed: sent twice
	for _, id := range ids[1:] {
		sc.apply(ev(0, lab.Started, id, "queue", ""), 0)
		sc.apply(ev(0, lab.Duplicate, id, "queue", ""), 0)
	}
	for _, id := range ids {
		sc.apply(lab.Event{Kind: lab.Summary, Task: id, Fate: lab.FateDone}, 0)
	}
	assert.Equal(t, 4, sc.count[lab.FateDone])
	assert.Equal(t, 0, sc.pending())
	assert.Equal(t, ids, sc.doneIDs.ids, "each once")
	for _, id := range ids {
		assert.Equal(t, done, sc.tokens[id].status, "%s is not drawn as being worked on", id)
	}
	assert.Empty(t, sc.members["queue"])
	m := testModel(fakeDLQ, 80, 24)
	m.scene.sc = sc
	assert.Contains(t, m.View(), "done 4 · dead 0 · dropped 0 · lost 0 · pending 0 · attempts 8")
}

// kindCases is one case per kind of the event contract, listed here by
// hand: the scene must have a rule for each, and each rule must show.
// A kind added to lab.Kinds without a case here fails
// TestSceneHasARuleForEveryKind.
var kindCases = []struct {
	kind  lab.Kind
	event lab.Event // applied after C was enqueued in "q" and started there
	check func(*testing.T, *scene)
}{
	{lab.Enqueued, ev(0, lab.Enqueued, "E", "q2", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, "q2", s.tokens["E"].queue)
	}},
	{lab.Started, ev(0, lab.Started, "C", "q", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, working, s.tokens["C"].status)
		assert.Equal(t, 2, s.attempts)
	}},
	{lab.Succeeded, ev(0, lab.Succeeded, "C", "q", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, 1, s.count[lab.FateDone])
	}},
	{lab.Failed, ev(0, lab.Failed, "C", "q", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, failing, s.tokens["C"].status)
	}},
	{lab.Moved, ev(0, lab.Moved, "C", "q", "q2"), func(t *testing.T, s *scene) {
		assert.Equal(t, "q2", s.tokens["C"].queue)
	}},
	{lab.Scheduled, lab.Event{Kind: lab.Scheduled, Task: "C", Queue: "q", To: "q2", DelayMs: 500}, func(t *testing.T, s *scene) {
		assert.Equal(t, delayed, s.tokens["C"].status)
	}},
	{lab.DeadLettered, ev(0, lab.DeadLettered, "C", "q", "dlq"), func(t *testing.T, s *scene) {
		assert.Equal(t, 1, s.count[lab.FateDead])
		assert.Equal(t, "dlq", s.tokens["C"].queue)
	}},
	{lab.Dropped, ev(0, lab.Dropped, "C", "q", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, 1, s.count[lab.FateDropped])
	}},
	{lab.Alerted, ev(0, lab.Alerted, "C", "", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, []string{"C"}, s.alerts)
	}},
	{lab.Breaker, lab.Event{Kind: lab.Breaker, Note: "open"}, func(t *testing.T, s *scene) {
		assert.Equal(t, "open", s.breaker.state)
	}},
	{lab.Rejected, ev(0, lab.Rejected, "C", "q", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, 1, s.breaker.rejected)
		assert.True(t, s.tokens["C"].rejected)
	}},
	{lab.Duplicate, ev(0, lab.Duplicate, "C", "q", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, 1, s.count[lab.FateDone])
		assert.Equal(t, done, s.tokens["C"].status)
	}},
	{lab.Redelivered, ev(0, lab.Redelivered, "C", "q2", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, "q2", s.tokens["C"].queue)
		assert.Equal(t, waiting, s.tokens["C"].status)
	}},
	{lab.Lost, ev(0, lab.Lost, "C", "q", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, 1, s.count[lab.FateLost])
	}},
	{lab.Summary, lab.Event{Kind: lab.Summary, Task: "C", Fate: lab.FateLost}, func(t *testing.T, s *scene) {
		assert.True(t, s.finished)
		assert.Equal(t, 1, s.count[lab.FateLost])
	}},
	{lab.Phase, lab.Event{Kind: lab.Phase, Note: "Run 2"}, func(t *testing.T, s *scene) {
		assert.Equal(t, "Run 2", s.phase)
	}},
	{lab.Received, ev(0, lab.Received, "C", "dlq", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, received, s.tokens["C"].status)
		assert.Equal(t, "dlq", s.tokens["C"].queue)
	}},
	{lab.ChannelClosed, ev(0, lab.ChannelClosed, "C", "q", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, 1, s.closes)
		assert.Empty(t, s.alerts, "a channel close is no alert mail")
		assert.Equal(t, working, s.tokens["C"].status, "a redelivered event, not the close, moves the task")
	}},
	{lab.Refused, ev(0, lab.Refused, "R", "q", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, 1, s.count[lab.FateRefused])
		assert.Equal(t, gone, s.tokens["R"].status)
		assert.Empty(t, s.tokens["R"].queue, "no queue holds a refused publish")
	}},
	{lab.Stranded, ev(0, lab.Stranded, "C", "q", "retry"), func(t *testing.T, s *scene) {
		assert.Equal(t, 1, s.count[lab.FateStranded])
		assert.Equal(t, 0, s.count[lab.FateDead], "a stranded task is not dead-lettered")
		assert.Equal(t, "retry", s.tokens["C"].queue)
		assert.Equal(t, stranded, s.tokens["C"].status)
	}},
	{lab.Mailed, ev(0, lab.Mailed, "C", "", ""), func(t *testing.T, s *scene) {
		assert.Equal(t, 1, s.mails)
		assert.Empty(t, s.alerts, "a customer's mail is no alert")
	}},
}

func TestSceneHasARuleForEveryKind(t *testing.T) {
	var listed []lab.Kind
	for _, c := range kindCases {
		listed = append(listed, c.kind)
		t.Run(string(c.kind), func(t *testing.T) {
			sc := newScene(nil)
			sc.apply(ev(0, lab.Enqueued, "C", "q", ""), 0)
			sc.apply(ev(0, lab.Started, "C", "q", ""), 0)
			require.True(t, sc.apply(c.event, 1), "the scene has no rule for %q", c.kind)
			c.check(t, sc)
		})
	}
	assert.ElementsMatch(t, lab.Kinds, listed, "every kind of lab.Kinds has a case here, and no other")
	assert.False(t, newScene(nil).apply(lab.Event{Kind: "teleported", Task: "C"}, 0), "an unknown kind is reported")
}

// The stats line counts the fates a stranded or refused task ends in, and
// the mails and closed channels that are no fate, only once they happen.
func TestStatsLineCountsTheNewKinds(t *testing.T) {
	m := testModel(fakeDLQ, 160, 48)
	assert.NotContains(t, m.scene.statsLine(160), "stranded")
	for _, e := range []lab.Event{
		ev(0, lab.Enqueued, "C", "q", ""), ev(0, lab.Stranded, "C", "q", "retry"),
		ev(0, lab.Refused, "R", "q", ""), ev(0, lab.Mailed, "A", "", ""), ev(0, lab.ChannelClosed, "C", "q", ""),
	} {
		m.scene.sc.apply(e, 0)
	}
	line := m.scene.statsLine(160)
	assert.Contains(t, line, "pending 0 · stranded 1 · refused 1 · attempts 0")
	assert.Contains(t, line, "· mails sent 1 · channels closed 1")
	// At 80 columns the fates still at zero give way, and the clock stays.
	assert.Equal(t, "done 0 · stranded 1 · refused 1 · attempts 0 · 00:00.000 · mails sent 1 · chann…", m.scene.statsLine(80))
}
