// Package q07 is lesson Q07 — exponential backoff.
//
// Notice: a failed task no longer goes straight to the next queue. It waits
// (time.AfterFunc) 1 s before the retry queue and 2 s before the second
// retry queue; the stamps show the gaps, and the scheduled lines say how
// long. A struggling downstream service gets time to recover between tries.
package q07

import (
	"context"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lesson"
)

var Lesson = lesson.Lesson{
	ID:    "Q07",
	Title: "Exponential backoff: wait 1 s, then 2 s",
	Notice: "A failed task waits before its next try: 1 s before the retry queue, 2 s before the second retry queue (time.AfterFunc). " +
		"Compare the stamps of C's failures and retries: the gaps double. After the last retry C is still dropped; Q08 fixes that.",
	InMem: runQ07,
}

func runQ07(ctx context.Context, env *lesson.Env) error {
	chain := NewChain(ctx, env)
	return chain.Run(ctx, env, func(actor string, from *inmem.Queue, t *inmem.Task) {
		chain.Sys.Drop(actor, t, from.Name(), "all retries failed")
	})
}
