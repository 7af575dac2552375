package lesson

import (
	"context"
	"fmt"

	"github.com/queuelab/qlab/inmem"
)

// PlanQueue starts the run's in-memory System and has the Producer put the
// plan's tasks, in order, on its main queue, "queue": all at once, or one
// every Plan.Every of lesson time. room is the capacity the lesson gives
// every queue: a slot per task and one spare, so moving a task never
// blocks a worker.
func PlanQueue(ctx context.Context, env *Env) (sys *inmem.System, queue *inmem.Queue, room int) {
	sys = inmem.New(ctx, env.Stream, env.Plan)
	room = len(env.Plan.Tasks) + 1
	queue = sys.Queue("queue", room)
	if env.Plan.Every > 0 {
		sys.Produce("Producer", queue, env.Plan.Tasks, env.Plan.Every)
		return sys, queue, room
	}
	for _, id := range env.Plan.Tasks {
		queue.Enqueue("Producer", id)
	}
	return sys, queue, room
}

// WorkerName names consumer i of n on one queue: the base name alone when
// it has one consumer, base-1, base-2 … when several compete (one actor
// name per goroutine keeps transcripts canonical).
func WorkerName(base string, i, n int) string {
	if n <= 1 {
		return base
	}
	return fmt.Sprintf("%s-%d", base, i+1)
}

// WatchInMem lets the run sample the depth of in-memory queues. Tasks
// waiting on a time.AfterFunc timer are in no queue: nothing can show them.
func WatchInMem(env *Env, queues ...*inmem.Queue) {
	for _, q := range queues {
		env.Watch(q.Name(), func(context.Context) (int, error) { return q.Len(), nil })
	}
}
