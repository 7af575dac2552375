// Package q06 is lesson Q06 — idempotency.
//
// Notice: every task is delivered twice, because its first ack is lost
// (at-least-once delivery). Task A has no guard and its email goes out
// twice; B, C and D each use one idempotency strategy, and their second
// delivery is skipped as a duplicate. The table counts the emails.
package q06

import (
	"context"
	"fmt"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/render"
)

var Lesson = lesson.Lesson{
	ID:    "Q06",
	Title: "Idempotency: duplicates and three guards",
	Notice: "Every task arrives twice because its first ack is lost (at-least-once). A has no guard and sends its email twice; " +
		"B (processed-ID set), C (conditional state transition) and D (stored result) skip the second delivery as a duplicate. No task fails here.",
	InMem: runQ06,
}

// idempotencyGuard runs a task's side effect at most once per task id, no
// matter how often the task is delivered. Once calls effect unless the
// guard knows it already ran for id; skipped says why it did not ("" when
// effect ran). result is effect's result, or the one remembered for id.
type idempotencyGuard interface {
	Name() string
	Once(id string, effect func() string) (result, skipped string)
}

// noGuard is the unguarded handler: every delivery runs the effect.
type noGuard struct{}

func (noGuard) Name() string { return "none" }

func (noGuard) Once(_ string, effect func() string) (string, string) { return effect(), "" }

// processedIDs is strategy 1, deduplication: remember each processed id
// (in a real system a Redis set or a table with a unique key, INSERT … ON
// CONFLICT DO NOTHING) and skip ids already in it.
type processedIDs struct{ seen map[string]bool }

func (processedIDs) Name() string { return "processed-ID set" }

func (g processedIDs) Once(id string, effect func() string) (string, string) {
	if g.seen[id] {
		return "", "task id already in the processed-ID set"
	}
	result := effect()
	g.seen[id] = true
	return result, ""
}

// stateTransition is strategy 2, a conditional update: the effect runs only
// for the delivery that moves the task from PENDING to SENT, as
// UPDATE … SET status='SENT' WHERE id=? AND status='PENDING' does; a
// repeated delivery matches no row.
type stateTransition struct{ status map[string]string }

func (stateTransition) Name() string { return "conditional state transition" }

func (g stateTransition) Once(id string, effect func() string) (string, string) {
	if !g.transition(id, "PENDING", "SENT") {
		return "", "status is already " + g.status[id] + ": the conditional update matched no row"
	}
	return effect(), ""
}

// transition sets id's status to to if it is from (a task nobody has seen
// yet is PENDING), and reports whether it did.
func (g stateTransition) transition(id, from, to string) bool {
	current, ok := g.status[id]
	if !ok {
		current = "PENDING"
	}
	if current != from {
		return false
	}
	g.status[id] = to
	return true
}

// storedResult is strategy 3: store the effect's result with the task and
// answer a repeated delivery with the stored result instead of redoing the
// work (the way a payment API replays the response to a retried charge).
type storedResult struct{ results map[string]string }

func (storedResult) Name() string { return "stored result" }

func (g storedResult) Once(id string, effect func() string) (string, string) {
	if r, ok := g.results[id]; ok {
		return r, "returned the stored result " + r
	}
	r := effect()
	g.results[id] = r
	return r, ""
}

// q06Guards are the strategies in the order tasks are assigned to them.
func q06Guards() []idempotencyGuard {
	return []idempotencyGuard{
		noGuard{},
		processedIDs{seen: map[string]bool{}},
		stateTransition{status: map[string]string{}},
		storedResult{results: map[string]string{}},
	}
}

// outbox is the side effect: a mail server that counts what it sent.
type outbox struct {
	total int
	sent  map[string]int // emails per task
}

// send emails the customer of task id and returns the message id.
func (o *outbox) send(id string) string {
	o.total++
	o.sent[id]++
	return fmt.Sprintf("msg-%d", o.total)
}

func runQ06(ctx context.Context, env *lesson.Env) error {
	sys := inmem.New(ctx, env.Stream, env.Plan)
	queue := sys.Queue("queue", len(env.Plan.Tasks)+1)
	guards := q06Guards()
	guardOf := map[string]idempotencyGuard{}
	for i, id := range env.Plan.Tasks {
		guardOf[id] = guards[i%len(guards)]
		queue.Enqueue("Producer", id)
	}
	mail := &outbox{sent: map[string]int{}}
	delivered := map[string]int{}
	const worker = "Sequential-Worker"
	// Only this worker touches the guards, the outbox and the counts: no locks.
	sys.Worker(worker, queue, func(t *inmem.Task) {
		sys.Begin(worker, queue, t)
		delivered[t.ID]++
		if sys.Sleep(ctx, env.Plan.Work) != nil {
			return // the run was cancelled; the task stays pending
		}
		result, skipped := guardOf[t.ID].Once(t.ID, func() string { return mail.send(t.ID) })
		if skipped != "" {
			sys.Skip(worker, queue, t, skipped)
			return
		}
		sys.Succeed(worker, queue, t, fmt.Sprintf("email %s sent, the %s for this task", result, ordinal(mail.sent[t.ID])))
		if t.Attempt == 1 {
			// The worker acked, but the ack never reached the queue.
			queue.Redeliver("Queue", t, "its ack was lost, so it is delivered again")
		}
	})
	err := sys.Wait(ctx)
	env.Report(q06Table(env.Plan.Tasks, guardOf, delivered, mail))
	return err
}

// q06Table counts the side effects per strategy.
func q06Table(tasks []string, guardOf map[string]idempotencyGuard, delivered map[string]int, mail *outbox) render.Table {
	t := render.Table{
		Title:  "Side effects per strategy",
		Header: []string{"strategy", "task", "deliveries", "emails sent"},
		Notes:  []string{"An idempotent handler sends one email however often the task is delivered."},
	}
	for _, id := range tasks {
		t.Rows = append(t.Rows, []string{guardOf[id].Name(), id, fmt.Sprint(delivered[id]), fmt.Sprint(mail.sent[id])})
	}
	return t
}

// ordinal spells 1, 2, 3 as "1st", "2nd", "3rd" (and "4th" onwards).
func ordinal(n int) string {
	switch n {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return fmt.Sprintf("%dth", n)
}
