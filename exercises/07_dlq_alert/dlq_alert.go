//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package dlqalert

import (
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
)

// StartAlerts starts the worker that alerts on dlq: for each task that
// arrives there it says it received it and sends one alert mail.
func StartAlerts(sys *inmem.System, dlq *inmem.Queue, mailer inmem.Mailer) {
	// TODO: start a worker named "DLQ-Worker" on dlq (sys.Worker). For each
	//       task t it takes:
	//   1. report that it took t off the queue:
	//      sys.Stream().Emit(lab.Event{Kind: lab.Received, Task: t.ID, Queue: dlq.Name(), Actor: "DLQ-Worker"})
	//   2. send the alert: mailer.Send(t.ID, inmem.DLQAlert(t.ID)).
	_ = lab.Received
}
