//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package metrictypes

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queuelab/qlab/flow"
)

// Metrics are a worker's metrics: how long each attempt took
// (ConsumeDuration), how many attempts were acked (AckTotal) and nacked
// (NackTotal), and how many messages a queue holds now (Depth). Every
// series carries one label, QueueLabel, the queue's name.
type Metrics struct {
	// TODO: one field per metric, of the type its job needs: a
	//       *prometheus.HistogramVec, *prometheus.CounterVec or
	//       *prometheus.GaugeVec, each labelled by QueueLabel alone.
}

// New makes the four metrics and registers them on reg, the registry the
// run serves on /metrics (never the global one: two runs in one process
// must not share counts).
func New(reg prometheus.Registerer) *Metrics {
	// TODO: make each metric (a duration's histogram with Buckets) and
	//       reg.MustRegister them.
	return &Metrics{}
}

// Handled records one attempt at delivery d: it took took, and err is
// how it ended (nil: the message was acked; otherwise nacked).
func (m *Metrics) Handled(d *flow.Delivery, took time.Duration, err error) {
	// TODO: observe the duration, count the ack or the nack, on d's queue.
}

// Depth records that queue holds n messages now.
func (m *Metrics) Depth(queue string, n int) {
	// TODO: record n as the queue's depth.
}
