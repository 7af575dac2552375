//go:build qlabex

package dlqalert

import (
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
)

// StartAlerts starts the worker that alerts on dlq: for each task that
// arrives there it says it received it and sends one alert mail.
func StartAlerts(sys *inmem.System, dlq *inmem.Queue, mailer inmem.Mailer) {
	sys.Worker("DLQ-Worker", dlq, func(t *inmem.Task) {
		sys.Stream().Emit(lab.Event{Kind: lab.Received, Task: t.ID, Queue: dlq.Name(), Actor: "DLQ-Worker"})
		mailer.Send(t.ID, inmem.DLQAlert(t.ID)) // on its own goroutine: the retry workers never wait for it
	})
}
