// Package metrics records seed 003's queue metrics with
// prometheus/client_golang on a registry of its own, fed as a sink of the
// lab event stream, and serves them on a loopback /metrics.
//
// What the stream says, the sink counts by itself: an attempt that
// succeeds is an ack, one that fails a nack, a redelivery a redelivery;
// an attempt's lesson time is the consume duration, and the lesson time
// from a task's arrival in a queue (enqueued, moved, scheduled to arrive,
// redelivered) to a worker starting on it is the wait time. What only a
// backend knows (a publish's confirm round trip, a queue's depth, its
// consumers, the connection) it reports through the methods of the same
// name. Both backends report the same names; the labels are the lesson,
// the backend and the queue, never a task id or a message body, so the
// number of series stays bounded by the lesson's topology.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queuelab/qlab/lab"
)

// The metric names, as seed 003 lists them.
const (
	PublishDuration  = "queue_message_publish_duration_seconds"
	ConsumeDuration  = "queue_message_consume_duration_seconds"
	WaitTime         = "queue_wait_time_seconds"
	AckTotal         = "queue_message_ack_total"
	NackTotal        = "queue_message_nack_total"
	RedeliveryTotal  = "queue_message_redelivery_total"
	ChannelOpens     = "queue_channel_opens_total"
	ChannelCloses    = "queue_channel_closes_total"
	Depth            = "queue_depth_messages"
	ConsumersActive  = "queue_consumers_active"
	ConnectionStatus = "queue_connection_status"
)

// Labels of the per-queue metrics and of the per-connection ones.
var (
	queueLabels = []string{"lesson", "backend", "queue"}
	runLabels   = []string{"lesson", "backend"}
)

// buckets span a fast in-memory hand-off (1 ms) to the seed's longest
// retry wait (32 s).
var buckets = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2, 4, 8, 16, 32}

// Metrics is a run's metrics on a private registry. Emit is its sink
// side; it and the other methods (for backends) are safe for concurrent
// use, so one Metrics may take the streams of several runs in turn (the
// TUI's restarts, where a cancelled run may still be ending).
type Metrics struct {
	reg *prometheus.Registry

	publish, consume, wait             *prometheus.HistogramVec
	ack, nack, redelivery              *prometheus.CounterVec
	channelOpens, channelCloses        *prometheus.CounterVec
	depth, consumers, connectionStatus *prometheus.GaugeVec

	mu sync.Mutex // guards the sink state below
	// Sink state, touched only from Emit.
	started map[attemptKey]int64 // an attempt's start, lesson ms
	arrived map[arrivalKey]int64 // a task's arrival in a queue, lesson ms
}

type attemptKey struct {
	task, queue string
	attempt     int
}

type arrivalKey struct{ task, queue string }

// New makes the metrics and registers them on a new registry of their own
// (never the global one: two runs in one process must not share counts).
func New() *Metrics {
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, queueLabels)
	}
	counter := func(name, help string, labels []string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels []string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		reg:              prometheus.NewRegistry(),
		publish:          hist(PublishDuration, "Time from publish to the broker's confirm (or the in-memory hand-off)."),
		consume:          hist(ConsumeDuration, "Lesson time a processing attempt took."),
		wait:             hist(WaitTime, "Lesson time a task waited in a queue before a worker started on it."),
		ack:              counter(AckTotal, "Attempts that succeeded: the message was acknowledged.", queueLabels),
		nack:             counter(NackTotal, "Attempts that failed: the message was nacked or rejected.", queueLabels),
		redelivery:       counter(RedeliveryTotal, "Messages handed out again after a lost consumer.", queueLabels),
		channelOpens:     counter(ChannelOpens, "Channels opened.", runLabels),
		channelCloses:    counter(ChannelCloses, "Channels closed.", runLabels),
		depth:            gauge(Depth, "Messages in the queue (ready only, when read with a passive declare).", queueLabels),
		consumers:        gauge(ConsumersActive, "Consumers attached to the queue.", queueLabels),
		connectionStatus: gauge(ConnectionStatus, "1 while connected to the broker, 0 while not.", runLabels),
		started:          map[attemptKey]int64{},
		arrived:          map[arrivalKey]int64{},
	}
	m.reg.MustRegister(m.publish, m.consume, m.wait, m.ack, m.nack, m.redelivery,
		m.channelOpens, m.channelCloses, m.depth, m.consumers, m.connectionStatus)
	return m
}

// Registry is the private registry the metrics are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Emit is the sink: it counts what event e says (see the package comment)
// and ignores the kinds that say nothing about these metrics.
func (m *Metrics) Emit(e lab.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	labels := prometheus.Labels{"lesson": e.Lesson, "backend": string(e.Backend), "queue": e.Queue}
	switch e.Kind {
	case lab.Enqueued:
		m.arrive(e.Task, e.Queue, e.TMs)
	case lab.Moved, lab.DeadLettered:
		m.arrive(e.Task, e.To, e.TMs)
	case lab.Scheduled:
		m.arrive(e.Task, e.To, e.TMs+e.DelayMs)
	case lab.Redelivered:
		m.redelivery.With(labels).Inc()
		m.arrive(e.Task, e.Queue, e.TMs)
	case lab.Started:
		k := arrivalKey{e.Task, e.Queue}
		if at, ok := m.arrived[k]; ok {
			m.wait.With(labels).Observe(seconds(max(e.TMs-at, 0)))
			delete(m.arrived, k)
		}
		m.started[attemptKey{e.Task, e.Queue, e.Attempt}] = e.TMs
	case lab.Succeeded, lab.Failed:
		k := attemptKey{e.Task, e.Queue, e.Attempt}
		if at, ok := m.started[k]; ok {
			m.consume.With(labels).Observe(seconds(e.TMs - at))
			delete(m.started, k)
		}
		if e.Kind == lab.Succeeded {
			m.ack.With(labels).Inc()
		} else {
			m.nack.With(labels).Inc()
		}
	case lab.Summary:
		m.forget(e.Task)
	}
}

// arrive notes that task reached queue at lesson ms; a later arrival
// replaces an earlier one that no worker took.
func (m *Metrics) arrive(task, queue string, ms int64) {
	if task != "" && queue != "" {
		m.arrived[arrivalKey{task, queue}] = ms
	}
}

// forget drops what is kept about a task whose run is over, so a long run
// keeps no state per finished task.
func (m *Metrics) forget(task string) {
	for k := range m.arrived {
		if k.task == task {
			delete(m.arrived, k)
		}
	}
	for k := range m.started {
		if k.task == task {
			delete(m.started, k)
		}
	}
}

func seconds(ms int64) float64 { return float64(ms) / 1000 }

// Run names the lesson run a backend reports for, as the stream stamps
// it: "q21" and lab.Rabbit.
type Run struct {
	Lesson  string
	Backend lab.Backend
}

func (r Run) labels() prometheus.Labels {
	return prometheus.Labels{"lesson": r.Lesson, "backend": string(r.Backend)}
}

func (r Run) queue(q string) prometheus.Labels {
	l := r.labels()
	l["queue"] = q
	return l
}

// ObservePublish records one publish to queue that took d (to the
// broker's confirm, or the in-memory hand-off).
func (m *Metrics) ObservePublish(r Run, queue string, d time.Duration) {
	m.publish.With(r.queue(queue)).Observe(d.Seconds())
}

// SetDepth records how many messages queue holds now. A passive declare
// counts ready messages only, not those delivered and unacknowledged.
func (m *Metrics) SetDepth(r Run, queue string, n int) {
	m.depth.With(r.queue(queue)).Set(float64(n))
}

// SetConsumers records how many consumers queue has now.
func (m *Metrics) SetConsumers(r Run, queue string, n int) {
	m.consumers.With(r.queue(queue)).Set(float64(n))
}

// SetConnected records whether the run is connected to its broker (1) or
// not (0).
func (m *Metrics) SetConnected(r Run, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	m.connectionStatus.With(r.labels()).Set(v)
}

// ChannelOpened counts a channel opened.
func (m *Metrics) ChannelOpened(r Run) { m.channelOpens.With(r.labels()).Inc() }

// ChannelClosed counts a channel closed.
func (m *Metrics) ChannelClosed(r Run) { m.channelCloses.With(r.labels()).Inc() }
