package q14

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/versions"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/notify"
)

// retryRow is one retry as measured: sent round at sentAt (lesson time)
// with its delay, back after waited.
type retryRow struct {
	strategy string
	task     string
	retries  int           // the body's retries after the increment
	delay    time.Duration // getRetryDelay(retries), the seed's figure
	via      string
	sentAt   time.Duration
	waited   time.Duration
}

// stopwatch times each retry of a run: started when the worker sends a
// job round (sentRound), stopped when the job is delivered again (back).
// Its zero value is ready.
type stopwatch struct {
	mu      sync.Mutex
	pending map[string]retryRow // task → its retry in the air
	done    []retryRow
}

// sentRound starts the stopwatch of r.task's retry.
func (s *stopwatch) sentRound(r retryRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[string]retryRow{}
	}
	s.pending[r.task] = r
}

// back stops the stopwatch of task's retry at now, if one was in the air.
func (s *stopwatch) back(task string, now time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.pending[task]
	if !ok {
		return
	}
	delete(s.pending, task)
	r.waited = now - r.sentAt
	s.done = append(s.done, r)
}

// measured is every retry that came back, in the order it did.
func (s *stopwatch) measured() []retryRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]retryRow(nil), s.done...)
}

// late is how much longer than its delay the retry waited.
func (r retryRow) late() time.Duration { return max(0, r.waited-r.delay) }

// heldBack says the retry waited far past its delay: by more than half of
// it, which no broker's expiry timer explains, only a message ahead of it.
func (r retryRow) heldBack() bool { return r.late() > r.delay/2 }

// report adds the lesson's three tables: every retry, the strategies side
// by side, and the seed's arithmetic.
func report(env *lesson.Env, rows []retryRow, facts flow.Facts) {
	env.Report(retriesTable(rows, facts.On()))
	env.Report(strategyTable(rows, facts))
	env.Report(arithmeticTable())
}

func retriesTable(rows []retryRow, on string) render.Table {
	t := render.Table{
		Title:  "What happened to each retry (" + on + ")",
		Header: []string{"run", "task", "retries", "delay", "through", "waited", "late by"},
		Notes: []string{
			"Delays are the seed's getRetryDelay, in lesson time (--speed runs it faster). Waited: from the worker's decision to the next delivery, measured.",
		},
	}
	for _, r := range rows {
		late := secs(r.late())
		if r.heldBack() {
			late += " (held back)"
		}
		t.Rows = append(t.Rows, []string{r.strategy, r.task, strconv.Itoa(r.retries), secs(r.delay), r.via, secs(r.waited), late})
	}
	return t
}

func strategyTable(rows []retryRow, facts flow.Facts) render.Table {
	on, version := facts.On(), facts.Version
	t := render.Table{
		Title:  "Head-of-line blocking, strategy by strategy (" + on + ")",
		Header: []string{"strategy", "retries", "held back", "worst late", "total late"},
		Notes: []string{
			"Held back: late by more than half its own delay, because a longer delay sat at the head of the queue.",
			"RabbitMQ expires a message with a per-message TTL only once it reaches the head of its queue (the per-message TTL caveats of rabbitmq.com/docs/ttl); a wait queue with one x-message-ttl is always in expiry order.",
		},
	}
	if facts.Broker {
		t.Notes = append(t.Notes, "Quorum queue measured on RabbitMQ "+version+": "+quorumVerdict(rows)+" "+
			"The TTL guide says quorum queues dead-letter a message when it expires, without waiting for the head; "+
			"rabbitmq-server issue #10617 (2024, open, labelled bug) reports the head-of-line wait on a quorum queue too.",
			versions.QuorumTTLHead.Note(version))
	} else {
		t.Notes = append(t.Notes, "Memory has no queue types: run 3's retry queue is the same FIFO as run 1's, which is what RabbitMQ "+
			versions.Old+" and "+versions.New+" measured for a quorum queue (qlab run 14 shows the broker).")
	}
	for _, name := range strategyNames(rows) {
		var n, held int
		var worst, total time.Duration
		for _, r := range rows {
			if r.strategy != name {
				continue
			}
			n++
			if r.heldBack() {
				held++
			}
			worst, total = max(worst, r.late()), total+r.late()
		}
		t.Rows = append(t.Rows, []string{name, strconv.Itoa(n), strconv.Itoa(held), secs(worst), secs(total)})
	}
	return t
}

// quorumVerdict says what this run's quorum retry queue did, from its
// rows: whether it held a short retry behind a longer one.
func quorumVerdict(rows []retryRow) string {
	for _, r := range rows {
		if strings.Contains(r.strategy, "quorum") && r.heldBack() {
			return "it held short retries behind a long one just as a classic queue does."
		}
	}
	return "no retry was held back in it this run."
}

// strategyNames are the strategies of rows, in the order they ran.
func strategyNames(rows []retryRow) []string {
	var out []string
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1] != r.strategy {
			out = append(out, r.strategy)
		}
	}
	return out
}

// arithmeticTable walks the seed's catch block for a job that always
// fails: retries++, then getRetryDelay(retries) or the DLQ.
func arithmeticTable() render.Table {
	t := render.Table{
		Title:  "The seed's own arithmetic: retries++ runs before getRetryDelay",
		Header: []string{"failure", "retries after ++", "then"},
		Notes: []string{
			fmt.Sprintf("RETRY_DELAYS[0] (%s) is never read; MAX_RETRIES = %d gives %d retries, while the text says \"retry 1, 2, 3\".",
				notify.RetryDelays[0], notify.MaxRetries, len(notify.Waits())),
		},
	}
	for before := 0; ; before++ {
		retries, delay, dead := notify.Decide(before)
		then := "retry queue, getRetryDelay(" + strconv.Itoa(retries) + ") = " + delay.String()
		if dead {
			then = fmt.Sprintf("%d >= MAX_RETRIES: status failed, to email-dlq", retries)
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(before + 1), strconv.Itoa(retries), then})
		if dead {
			return t
		}
	}
}

// secs is d in seconds of lesson time, as the seed writes its TTLs (30s …
// 300s): whole seconds, else to the tenth (a broker's measured waits).
func secs(d time.Duration) string {
	d = d.Round(100 * time.Millisecond)
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
