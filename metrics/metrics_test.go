package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
)

// run emits a small run into m the way a Stream hands events to a sink
// (stamped, in order): task A fails once, waits 1 s in a delay and
// succeeds; task B is redelivered and succeeds.
func run(m *Metrics) {
	ev := func(ms int64, kind lab.Kind, task, queue string, attempt int) lab.Event {
		return lab.Event{TMs: ms, Lesson: "q07", Backend: lab.InMem, Kind: kind, Task: task, Queue: queue, Attempt: attempt}
	}
	scheduled := ev(300, lab.Scheduled, "A", "work", 1)
	scheduled.To, scheduled.DelayMs = "work", 1000
	for _, e := range []lab.Event{
		ev(0, lab.Enqueued, "A", "work", 0),
		ev(100, lab.Started, "A", "work", 1),
		ev(300, lab.Failed, "A", "work", 1),
		scheduled,
		ev(1300, lab.Started, "A", "work", 2),
		ev(1350, lab.Succeeded, "A", "work", 2),
		ev(2000, lab.Redelivered, "B", "work", 1),
		ev(2100, lab.Started, "B", "work", 2),
		ev(2200, lab.Succeeded, "B", "work", 2),
		ev(2300, lab.Summary, "A", "", 2),
		ev(2300, lab.Summary, "B", "", 2),
	} {
		m.Emit(e)
	}
	r := Run{Lesson: "q07", Backend: lab.InMem}
	m.ObservePublish(r, "work", 2*time.Millisecond)
	m.SetDepth(r, "work", 3)
	m.SetConsumers(r, "work", 2)
	m.SetConnected(r, true)
	m.ChannelOpened(r)
	m.ChannelOpened(r)
	m.ChannelClosed(r)
}

// scrape serves m on loopback, GETs /metrics and parses the text format.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	s, err := Serve(m, "127.0.0.1:0", ServeOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close(context.Background())) }()
	resp, err := http.Get(s.URL())
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err, "the text format parses:\n%s", body)
	return families
}

func TestScrapeShowsTheSeedsMetricsWithTheirTypesAndCounts(t *testing.T) {
	m := New()
	run(m)
	got := scrape(t, m)
	types := map[string]dto.MetricType{
		PublishDuration: dto.MetricType_HISTOGRAM, ConsumeDuration: dto.MetricType_HISTOGRAM,
		WaitTime: dto.MetricType_HISTOGRAM, AckTotal: dto.MetricType_COUNTER, NackTotal: dto.MetricType_COUNTER,
		RedeliveryTotal: dto.MetricType_COUNTER, ChannelOpens: dto.MetricType_COUNTER,
		ChannelCloses: dto.MetricType_COUNTER, Depth: dto.MetricType_GAUGE,
		ConsumersActive: dto.MetricType_GAUGE, ConnectionStatus: dto.MetricType_GAUGE,
	}
	for name, typ := range types {
		f, ok := got[name]
		require.True(t, ok, "%s is served", name)
		assert.Equal(t, typ, f.GetType(), name)
		assert.NotEmpty(t, f.GetHelp(), name)
	}
	assert.Len(t, got, len(types), "nothing else is on the private registry (no Go runtime metrics)")

	value := func(name string) float64 {
		metric := got[name].GetMetric()[0]
		switch got[name].GetType() {
		case dto.MetricType_COUNTER:
			return metric.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return metric.GetGauge().GetValue()
		}
		return float64(metric.GetHistogram().GetSampleCount())
	}
	want := map[string]float64{
		AckTotal: 2, NackTotal: 1, RedeliveryTotal: 1, ConsumeDuration: 3, WaitTime: 3,
		PublishDuration: 1, Depth: 3, ConsumersActive: 2, ConnectionStatus: 1, ChannelOpens: 2, ChannelCloses: 1,
	}
	for name, v := range want {
		assert.Equal(t, v, value(name), name)
	}
	// A: 0.2 s failing + 0.05 s succeeding; B: 0.1 s.
	assert.InDelta(t, 0.35, got[ConsumeDuration].GetMetric()[0].GetHistogram().GetSampleSum(), 1e-9)
	// A waits 0.1 s, then arrives from its 1 s delay as the worker starts
	// (0 s); B waits 0.1 s after its redelivery.
	assert.InDelta(t, 0.2, got[WaitTime].GetMetric()[0].GetHistogram().GetSampleSum(), 1e-9)
	labels := map[string]string{}
	for _, l := range got[AckTotal].GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	assert.Equal(t, map[string]string{"lesson": "q07", "backend": "inmem", "queue": "work"}, labels)
}

// TestTaskIDsNeverBecomeLabels runs 1000 tasks with ids and bodies in
// their events through a real Stream: the series stay one per queue and
// metric, no label value carries a task id or a note, and the sink keeps
// nothing per task once the summaries are out.
func TestTaskIDsNeverBecomeLabels(t *testing.T) {
	m := New()
	s := lab.NewStream("q21", lab.Rabbit, lab.NewClock(1), m)
	queues := []string{"birthday.messages.queue", "birthday.messages.dlq"}
	for i := range 1000 {
		task := fmt.Sprintf("task-%04d", i)
		q := queues[i%2]
		s.Emit(lab.Event{Kind: lab.Enqueued, Task: task, Queue: q, Note: `{"body":"` + task + `"}`})
		_ = s.Attempt(lab.Event{Task: task, Queue: q, Attempt: 1}, func() error {
			if i%3 == 0 {
				return fmt.Errorf("send %s failed", task)
			}
			return nil
		})
		if i%5 == 0 {
			s.Emit(lab.Event{Kind: lab.Redelivered, Task: task, Queue: q})
		}
	}
	s.Finish()
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	series := 0
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			series++
			for _, l := range metric.GetLabel() {
				assert.NotContains(t, l.GetValue(), "task-", "%s{%s}", f.GetName(), l.GetName())
				assert.Contains(t, []string{"lesson", "backend", "queue"}, l.GetName())
			}
		}
	}
	assert.LessOrEqual(t, series, 2*6, "at most one series per queue for each of the six metrics the stream feeds")
	assert.Empty(t, m.started, "no attempt kept after the run")
	assert.Empty(t, m.arrived, "no arrival kept after the run")
}

func TestServeRefusesAnAddressOtherMachinesReach(t *testing.T) {
	m := New()
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:9100", "example.com:9100", "[::]:0"} {
		_, err := Serve(m, addr, ServeOptions{})
		assert.ErrorIs(t, err, ErrNotLoopback, addr)
	}
	_, err := Serve(m, "9100", ServeOptions{})
	assert.ErrorContains(t, err, "want host:port")
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		s, err := Serve(m, addr, ServeOptions{})
		require.NoError(t, err, addr)
		assert.True(t, strings.HasPrefix(s.URL(), "http://127.0.0.1:"), s.URL())
		require.NoError(t, s.Close(context.Background()))
	}
	s, err := Serve(m, ":0", ServeOptions{Public: true})
	require.NoError(t, err, "asked for explicitly")
	require.NoError(t, s.Close(context.Background()))
}

func TestTwoRunsDoNotShareCounts(t *testing.T) {
	a, b := New(), New()
	run(a)
	families, err := b.Registry().Gather()
	require.NoError(t, err)
	assert.Empty(t, families, "a second registry starts empty")
}

// TestTotalsSumOneRunsSeries: Totals reads back what the scrape shows for
// one lesson and backend, and leaves another run's series out.
func TestTotalsSumOneRunsSeries(t *testing.T) {
	m := New()
	run(m)
	m.Emit(lab.Event{Lesson: "q08", Backend: lab.InMem, Kind: lab.Succeeded, Task: "Z", Queue: "work", Attempt: 1})
	got := m.Totals(Run{Lesson: "q07", Backend: lab.InMem})
	assert.Equal(t, Totals{
		Acks: 2, Nacks: 1, Redeliveries: 1, Attempts: 3, ConsumeSeconds: got.ConsumeSeconds,
		Waits: 3, WaitSeconds: got.WaitSeconds, Publishes: 1, Depth: 3, Consumers: 2, Gauges: true,
	}, got)
	assert.InDelta(t, 0.35, got.ConsumeSeconds, 1e-9)
	assert.InDelta(t, 0.2, got.WaitSeconds, 1e-9)
	assert.Equal(t, 1.0, m.Totals(Run{Lesson: "q08", Backend: lab.InMem}).Acks, "the other run's own")
	assert.Equal(t, Totals{}, m.Totals(Run{Lesson: "q07", Backend: lab.Rabbit}))
}
