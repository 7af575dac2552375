//go:build qlabex

// Wrong: no DLQ-Worker at all: the parked tasks wait for ever, no alert.
// First failure: the run ends by itself

package dlqalert

import "github.com/queuelab/qlab/inmem"

func StartAlerts(sys *inmem.System, dlq *inmem.Queue, mailer inmem.Mailer) {}
