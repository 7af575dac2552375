package metrics

import dto "github.com/prometheus/client_model/go"

// Totals are a run's figures summed over its queues: what a glance needs
// (the TUI's metrics panel), read from the same registry /metrics serves.
type Totals struct {
	Acks, Nacks, Redeliveries float64
	Attempts                  uint64  // consume durations observed
	ConsumeSeconds            float64 // their sum
	Waits                     uint64  // wait times observed
	WaitSeconds               float64 // their sum
	Publishes                 uint64  // publish durations observed (backends that report them)
	// Depth and Consumers sum the gauges a backend set; Gauges says
	// whether any did (the stream alone sets none).
	Depth, Consumers float64
	Gauges           bool
}

// Totals sums every series labelled with r's lesson and backend. A
// registry that cannot be gathered reads as zero: the figures are for
// display, and /metrics reports the error itself.
func (m *Metrics) Totals(r Run) Totals {
	var t Totals
	families, _ := m.reg.Gather()
	for _, f := range families {
		for _, s := range f.GetMetric() {
			if !r.matches(s) {
				continue
			}
			t.add(f.GetName(), s)
		}
	}
	return t
}

// matches reports whether series s is r's.
func (r Run) matches(s *dto.Metric) bool {
	want := map[string]string{"lesson": r.Lesson, "backend": string(r.Backend)}
	for _, l := range s.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
			return false
		}
	}
	return true
}

func (t *Totals) add(name string, s *dto.Metric) {
	switch name {
	case AckTotal:
		t.Acks += s.GetCounter().GetValue()
	case NackTotal:
		t.Nacks += s.GetCounter().GetValue()
	case RedeliveryTotal:
		t.Redeliveries += s.GetCounter().GetValue()
	case ConsumeDuration:
		t.Attempts += s.GetHistogram().GetSampleCount()
		t.ConsumeSeconds += s.GetHistogram().GetSampleSum()
	case WaitTime:
		t.Waits += s.GetHistogram().GetSampleCount()
		t.WaitSeconds += s.GetHistogram().GetSampleSum()
	case PublishDuration:
		t.Publishes += s.GetHistogram().GetSampleCount()
	case Depth:
		t.Depth += s.GetGauge().GetValue()
		t.Gauges = true
	case ConsumersActive:
		t.Consumers += s.GetGauge().GetValue()
		t.Gauges = true
	}
}
