//go:build qlabex

// Wrong: alerts without saying the DLQ-Worker took the task off the queue.
// First failure: a separate DLQ-Worker takes the task off the queue, then alerts

package dlqalert

import "github.com/queuelab/qlab/inmem"

func StartAlerts(sys *inmem.System, dlq *inmem.Queue, mailer inmem.Mailer) {
	sys.Worker("DLQ-Worker", dlq, func(t *inmem.Task) {
		mailer.Send(t.ID, inmem.DLQAlert(t.ID))
	})
}
