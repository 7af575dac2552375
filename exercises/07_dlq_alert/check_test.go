//go:build qlabex

package dlqalert

import (
	"fmt"
	"testing"
	"time"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
)

// mailLatency is long on purpose: a mail sent on a retry worker's
// goroutine would visibly hold up the tasks behind it.
const mailLatency = 5 * time.Second

func TestDLQAlert(t *testing.T) {
	c := check.New(t)
	for _, plan := range check.Plans() {
		r := check.Chain(t, plan, func(sys *inmem.System, room int) check.Exhausted {
			dlq := sys.Queue("deadLetterQueue", room)
			StartAlerts(sys, dlq, inmem.Mailer{Stream: sys.Stream(), Latency: mailLatency})
			return func(actor string, from *inmem.Queue, task *inmem.Task) {
				from.DeadLetter(actor, task, dlq, "failed all retries")
			}
		})
		c.Accounted(r, lab.FateDone, lab.FateDead)
		for _, id := range r.Plan.Tasks {
			dead := len(r.Of(id, lab.DeadLettered)) > 0
			alerts := r.Of(id, lab.Alerted)
			want := 0
			if dead {
				want = 1
			}
			c.Expect(r, "one alert per task in the dead-letter queue, none for the others",
				fmt.Sprintf("%s: %d alert(s)", id, len(alerts)), fmt.Sprintf("%s: %d alert(s)", id, want), id)
			if len(alerts) == 0 || !dead {
				continue
			}
			received := r.Of(id, lab.Received)
			got := id + ": no received event before the alert"
			if len(received) > 0 && received[0].Seq < alerts[0].Seq {
				got = fmt.Sprintf("%s: received by %s, then the alert", id, received[0].Actor)
			}
			c.Expect(r, "a separate DLQ-Worker takes the task off the queue, then alerts",
				got, id+": received by DLQ-Worker, then the alert", id)
		}
	}
}
