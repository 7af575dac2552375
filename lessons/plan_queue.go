package lessons

import (
	"context"

	"github.com/queuelab/qlab/inmem"
)

// planQueue starts the run's in-memory System and has the Producer put the
// plan's tasks, in order, on its main queue, "queue". room is the capacity
// the lesson gives every queue: a slot per task and one spare, so moving a
// task never blocks a worker.
func planQueue(ctx context.Context, env *Env) (sys *inmem.System, queue *inmem.Queue, room int) {
	sys = inmem.New(ctx, env.Stream, env.Plan)
	room = len(env.Plan.Tasks) + 1
	queue = sys.Queue("queue", room)
	for _, id := range env.Plan.Tasks {
		queue.Enqueue("Producer", id)
	}
	return sys, queue, room
}
