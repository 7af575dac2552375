package lab

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLedgerFateRules(t *testing.T) {
	ev := func(k Kind) Event { return Event{Kind: k, Task: "X"} }
	cases := []struct {
		name     string
		kinds    []Kind
		fate     Fate
		attempts int
	}{
		{"enqueued only is pending", []Kind{Enqueued}, FatePending, 0},
		{"success is done", []Kind{Enqueued, Started, Succeeded}, FateDone, 1},
		{"failure alone leaves it pending", []Kind{Enqueued, Started, Failed}, FatePending, 1},
		{"dead-lettered is dead", []Kind{Enqueued, Started, Failed, DeadLettered}, FateDead, 1},
		{"dropped is dropped", []Kind{Enqueued, Started, Failed, Dropped}, FateDropped, 1},
		{"lost is lost", []Kind{Enqueued, Lost}, FateLost, 0},
		{"a duplicate counts as done", []Kind{Enqueued, Started, Duplicate}, FateDone, 1},
		{"moved after success is pending again", []Kind{Enqueued, Started, Succeeded, Moved}, FatePending, 1},
		{"scheduled re-enters", []Kind{Enqueued, Started, Failed, DeadLettered, Scheduled}, FatePending, 1},
		{"redelivered re-enters, the next delivery decides", []Kind{Enqueued, Started, Succeeded, Redelivered, Started, Duplicate}, FateDone, 2},
		{"latest deciding event wins", []Kind{Enqueued, Started, Succeeded, Lost}, FateLost, 1},
		{"alerts do not change the fate", []Kind{Enqueued, Started, Failed, DeadLettered, Alerted}, FateDead, 1},
		{"rejected does not settle", []Kind{Enqueued, Rejected}, FatePending, 0},
		{"a refused publish makes the task, refused", []Kind{Refused}, FateRefused, 0},
		{"refused, then dead-lettered by reject-publish-dlx, is dead", []Kind{Refused, DeadLettered}, FateDead, 0},
		{"stranded is stranded", []Kind{Enqueued, Started, Failed, Stranded}, FateStranded, 1},
		{"a channel close settles nothing", []Kind{Enqueued, Started, ChannelClosed}, FatePending, 1},
		{"a customer's mail is no fate", []Kind{Enqueued, Started, Mailed}, FatePending, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l Ledger
			for i, k := range c.kinds {
				e := ev(k)
				e.TMs = int64(i * 10)
				l.Observe(e)
			}
			r, ok := l.Task("X")
			assert.True(t, ok)
			assert.Equal(t, c.fate, r.Fate)
			assert.Equal(t, c.attempts, r.Attempts)
			if c.fate == FatePending {
				assert.Equal(t, int64(-1), r.Settled)
			} else {
				assert.GreaterOrEqual(t, r.Settled, int64(0))
			}
		})
	}
}

// A redelivery in the DLQ a task was dead-lettered to (its consumer's
// ack lost with a connection) leaves the task dead: nothing would settle
// it again. One in any other queue (a lost reject) reopens it.
func TestLedgerARedeliveryInItsDLQKeepsATaskDead(t *testing.T) {
	at := func(k Kind, queue, to string) Event { return Event{Kind: k, Task: "X", Queue: queue, To: to} }
	parked := []Event{at(Enqueued, "work", ""), at(Started, "work", ""), at(Failed, "work", ""), at(DeadLettered, "work", "dlq")}
	cases := []struct {
		name  string
		then  []Event
		fate  Fate
		tries int
	}{
		{"handed out again by its DLQ", []Event{at(Received, "dlq", ""), at(Redelivered, "dlq", ""), at(Received, "dlq", "")}, FateDead, 1},
		{"its reject lost, handed out again where it was", []Event{at(Redelivered, "work", ""), at(Started, "work", ""), at(Succeeded, "work", "")}, FateDone, 2},
		{"its reject lost, still to decide", []Event{at(Redelivered, "work", "")}, FatePending, 1},
		{"re-driven, then handed out again by the old DLQ", []Event{at(Enqueued, "work", ""), at(Redelivered, "dlq", "")}, FatePending, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l Ledger
			for i, e := range append(slices.Clone(parked), c.then...) {
				e.TMs = int64(i * 10)
				l.Observe(e)
			}
			r, _ := l.Task("X")
			assert.Equal(t, c.fate, r.Fate)
			assert.Equal(t, c.tries, r.Attempts)
		})
	}
	var unnamed Ledger // a dead_lettered that names no DLQ: any redelivery reopens
	for _, e := range []Event{at(Enqueued, "work", ""), at(DeadLettered, "work", ""), at(Redelivered, "dlq", "")} {
		unnamed.Observe(e)
	}
	r, _ := unnamed.Task("X")
	assert.Equal(t, FatePending, r.Fate)
}

func TestLedgerIgnoresUnknownTasksAndSummaries(t *testing.T) {
	var l Ledger
	l.Observe(Event{Kind: Started, Task: "ghost"})
	l.Observe(Event{Kind: Enqueued}) // no task
	l.Observe(Event{Kind: Enqueued, Task: "A"})
	l.Observe(Event{Kind: Summary, Task: "A", Fate: FateDone})
	_, ghost := l.Task("ghost")
	assert.False(t, ghost, "a task exists from its first enqueued event")
	a, _ := l.Task("A")
	assert.Equal(t, FatePending, a.Fate, "a summary is output, not input")
	assert.Len(t, l.Tasks(), 1)
}

func TestLedgerFirstFailAndOrder(t *testing.T) {
	var l Ledger
	for _, e := range []Event{
		{Kind: Enqueued, Task: "B"}, {Kind: Enqueued, Task: "A"},
		{Kind: Failed, Task: "A", TMs: 300}, {Kind: Failed, Task: "A", TMs: 900},
	} {
		l.Observe(e)
	}
	tasks := l.Tasks()
	assert.Equal(t, "B", tasks[0].ID, "creation order, not alphabetical")
	assert.Equal(t, int64(-1), tasks[0].FirstFail)
	assert.Equal(t, int64(300), tasks[1].FirstFail)
}

// The ledger's counts agree with its records after every event of a
// random run: pending is the records still pending, and moves grows
// exactly when a task appears or its attempts or fate change, which is
// what a poller of a broker run watches (Stream.Progress).
func TestLedgerCountsFollowItsRecords(t *testing.T) {
	kinds := []Kind{Enqueued, Started, Succeeded, Failed, Moved, Scheduled, DeadLettered, Dropped,
		Duplicate, Redelivered, Lost, Stranded, Refused, Summary, Phase}
	rng := rand.New(rand.NewPCG(7, 11))
	var l Ledger
	type mark struct {
		attempts int
		fate     Fate
	}
	marks := func() []mark {
		var out []mark
		for _, r := range l.records {
			out = append(out, mark{r.Attempts, r.Fate})
		}
		return out
	}
	for i := range 5000 {
		before, moves := marks(), l.moves
		l.Observe(Event{Kind: kinds[rng.IntN(len(kinds))], Task: fmt.Sprint("T", rng.IntN(40)), TMs: int64(i)})
		after := marks()
		pending := 0
		for _, m := range after {
			if m.fate == FatePending {
				pending++
			}
		}
		require.Equal(t, pending, l.pending, "event %d", i)
		require.Equal(t, !slices.Equal(before, after), l.moves != moves, "event %d: moves counts a change, only a change", i)
	}
	assert.Greater(t, l.moves, uint64(100))
}

// The index grows from nothing through many doublings; every task must
// still be found, in any order, and an unknown id never.
func TestLedgerIndexManyTasks(t *testing.T) {
	var l Ledger
	const n = 20000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("task-%d", i)
		l.Observe(Event{Kind: Enqueued, Task: ids[i]})
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for _, i := range rng.Perm(n) {
		l.Observe(Event{Kind: Started, Task: ids[i]})
		if i%3 == 0 {
			l.Observe(Event{Kind: Started, Task: ids[i]})
		}
	}
	for i, id := range ids {
		r, ok := l.Task(id)
		require.True(t, ok, id)
		want := 1
		if i%3 == 0 {
			want = 2
		}
		require.Equal(t, want, r.Attempts, id)
	}
	for _, id := range []string{"task-20000", "task-", "", "TASK-1"} {
		_, ok := l.Task(id)
		assert.False(t, ok, id)
	}
	l.Observe(Event{Kind: Started, Task: "nobody"})
	got := l.Tasks()
	require.Len(t, got, n, "an event about an unknown task makes none")
	for i, r := range got {
		require.Equal(t, ids[i], r.ID, "creation order")
	}
}

// Tasks that end for the same reason share one copy of it, however each
// reason was built; past maxReasons distinct ones, each is still kept.
func TestLedgerSharesReasons(t *testing.T) {
	var l Ledger
	for i := range maxReasons + 50 {
		id := fmt.Sprint("T", i)
		l.Observe(Event{Kind: Enqueued, Task: id})
		note := fmt.Sprint("no retries left: ", "poison")
		if i%2 == 1 {
			note = fmt.Sprint("reason ", i) // distinct
		}
		l.Observe(Event{Kind: Dropped, Task: id, Note: note})
	}
	a, _ := l.Task("T0")
	b, _ := l.Task("T2")
	assert.Equal(t, "no retries left: poison", b.Reason)
	assert.Same(t, unsafe.StringData(a.Reason), unsafe.StringData(b.Reason), "one copy")
	for i := 1; i < maxReasons+50; i += 2 {
		r, _ := l.Task(fmt.Sprint("T", i))
		require.Equal(t, fmt.Sprint("reason ", i), r.Reason)
	}
}

// A ledger told how many tasks are coming (a plan's) holds their records
// in one array from the start and never regrows it or its index, which
// for a moment would hold the old and the new array (docs/benchmarks.md,
// 100,000 tasks); more tasks than reserved still fit, and every task is
// found before and after.
func TestLedgerReserveGrowsNothingOnTheWay(t *testing.T) {
	const n = 5000
	var l Ledger
	l.Observe(Event{Kind: Enqueued, Task: "early"})
	l.Reserve(n)
	records, slots := unsafe.SliceData(l.records), len(l.slots)
	for i := 1; i < n; i++ {
		l.Observe(Event{Kind: Enqueued, Task: fmt.Sprint("t", i)})
	}
	assert.Same(t, records, unsafe.SliceData(l.records), "the records' array moved: it grew")
	assert.Equal(t, slots, len(l.slots), "the index grew")
	l.Observe(Event{Kind: Enqueued, Task: "one more"})
	for _, id := range []string{"early", "t1", fmt.Sprint("t", n-1), "one more"} {
		_, ok := l.Task(id)
		assert.True(t, ok, id)
	}
	assert.Len(t, l.Tasks(), n+1)
}
