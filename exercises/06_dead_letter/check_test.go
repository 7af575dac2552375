//go:build qlabex

package deadletter

import (
	"fmt"
	"testing"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
)

func TestDeadLetter(t *testing.T) {
	c := check.New(t)
	for _, plan := range check.Plans() {
		var dlq *inmem.Queue
		r := check.Chain(t, plan, func(sys *inmem.System, room int) check.Exhausted {
			dlq = sys.HoldingQueue("deadLetterQueue", room)
			return func(actor string, from *inmem.Queue, task *inmem.Task) { Exhausted(sys, actor, from, dlq, task) }
		})
		c.Accounted(r, lab.FateDone, lab.FateDead)
		for _, id := range r.Plan.Tasks {
			drops, parks := len(r.Of(id, lab.Dropped)), len(r.Of(id, lab.DeadLettered))
			c.That(r, "a parked task is not also dropped: it ends in one place", drops == 0 || parks == 0,
				fmt.Sprintf("%s dropped %d time(s) and dead-lettered %d time(s): the log says both", id, drops, parks),
				id+" dead-lettered, never dropped", id)
		}
		parked := 0
		for _, id := range r.Plan.Tasks {
			if r.Failures(id) < 3 {
				continue
			}
			parked++
			dl := r.Of(id, lab.DeadLettered)
			got := id + " was not dead-lettered; its last event: " + r.Last(id)
			if len(dl) > 0 {
				got = fmt.Sprintf("%s dead-lettered to %s, reason %q", id, dl[0].To, dl[0].Note)
			}
			c.That(r, "a task that failed every retry is parked in deadLetterQueue with a reason",
				len(dl) == 1 && dl[0].To == "deadLetterQueue" && dl[0].Note != "", got,
				id+" dead-lettered to deadLetterQueue, with a reason", id)
		}
		c.Expect(r, "the dead-letter queue holds the parked tasks at the end",
			fmt.Sprintf("%d tasks in deadLetterQueue", dlq.Len()), fmt.Sprintf("%d tasks in deadLetterQueue", parked), "")
	}
}
