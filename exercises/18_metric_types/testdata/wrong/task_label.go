//go:build qlabex

// Wrong: labels by task id: one series per message, a registry that grows for ever.
// First failure: one label, the queue: never a task id or a body (bounded series)
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
	consume   *prometheus.HistogramVec // a duration: buckets aggregate, percentiles come from them
	ack, nack *prometheus.CounterVec   // totals: only up; rate() handles a restart's reset
	depth     *prometheus.GaugeVec     // a level: goes down as well as up
}

// New makes the four metrics and registers them on reg, the registry the
// run serves on /metrics (never the global one: two runs in one process
// must not share counts).
func New(reg prometheus.Registerer) *Metrics {
	labels := []string{QueueLabel, "task"} // which task was slow? Now every task is a series
	m := &Metrics{
		consume: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: ConsumeDuration,
			Help: "Seconds a processing attempt took.", Buckets: Buckets}, labels),
		ack:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: AckTotal, Help: "Attempts acked."}, labels),
		nack:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: NackTotal, Help: "Attempts nacked."}, labels),
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: Depth, Help: "Messages in the queue now."}, []string{QueueLabel}),
	}
	reg.MustRegister(m.consume, m.ack, m.nack, m.depth)
	return m
}

// Handled records one attempt at delivery d: it took took, and err is
// how it ended (nil: the message was acked; otherwise nacked).
func (m *Metrics) Handled(d *flow.Delivery, took time.Duration, err error) {
	m.consume.WithLabelValues(d.Queue, d.Task).Observe(took.Seconds()) // base units: seconds
	if err == nil {
		m.ack.WithLabelValues(d.Queue, d.Task).Inc()
	} else {
		m.nack.WithLabelValues(d.Queue, d.Task).Inc()
	}
}

// Depth records that queue holds n messages now.
func (m *Metrics) Depth(queue string, n int) {
	m.depth.WithLabelValues(queue).Set(float64(n))
}
