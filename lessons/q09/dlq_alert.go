// Package q09 is lesson Q09 — alert from the dead-letter queue.
//
// Notice: a separate DLQ-Worker takes C from the dead-letter queue and has
// the (mock) mail service send an alert. Mailing is slow (500 ms here), and
// because it happens in its own worker, the Second-Retry-Worker keeps
// retrying and dead-lettering other tasks meanwhile: the closing table runs
// both designs with two poison tasks and shows the retry that waits.
package q09

import (
	"context"
	"time"

	"github.com/queuelab/qlab/lessons/q07"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
)

// MailLatency is how long the mock mail service takes per alert, in
// lesson time: long enough to block whoever calls it.
const MailLatency = 500 * time.Millisecond

var Lesson = lesson.Lesson{
	ID:    "Q09",
	Title: "DLQ alert: a DLQ-Worker mails the admin",
	Notice: "A separate DLQ-Worker takes C from the dead-letter queue and the mock mail service sends the alert to admin@example.com. " +
		"Sending takes 500 ms; because it has its own worker, the retry workers never wait for it. " +
		"The table shows it with two poison tasks, C and E: when the Second-Retry-Worker mails C's alert itself, E's last retry starts 400 ms late; with the DLQ-Worker it starts on time.",
	InMem: runQ09,
}

// runQ09 is the whole in-memory flow of the seed: main → retry (1 s) →
// second retry (2 s) → DLQ → alert mail.
func runQ09(ctx context.Context, env *lesson.Env) error {
	chain := q07.NewChain(ctx, env)
	dlq := chain.Sys.Queue("deadLetterQueue", chain.Room)
	lesson.WatchInMem(env, dlq)
	mailer := inmem.Mailer{Stream: env.Stream, Latency: MailLatency}
	// The DLQ-Worker is a goroutine of its own: while it mails, the retry
	// workers go on.
	chain.Sys.Worker("DLQ-Worker", dlq, func(t *inmem.Task) {
		env.Stream.Emit(lab.Event{Kind: lab.Received, Task: t.ID, Queue: dlq.Name(), Actor: "DLQ-Worker"})
		mailer.Send(t.ID, inmem.DLQAlert(t.ID))
	})
	if err := chain.Run(ctx, env, func(actor string, from *inmem.Queue, t *inmem.Task) {
		from.DeadLetter(actor, t, dlq, "failed all retries") // dlq <- t: the DLQ-Worker takes it from here
	}); err != nil {
		return err
	}
	compare, err := q09Compare(ctx, env)
	env.Report(compare)
	return err
}
