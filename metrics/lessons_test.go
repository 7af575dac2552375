package metrics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/lessons/q10"
	"github.com/queuelab/qlab/metrics"
)

// TestEveryInMemoryLessonFeedsTheSink replays every in-memory lesson's
// real event stream into the sink (a sink sees exactly the recorded
// order): the counters agree with the stream's own events, every attempt
// has a consume duration and a wait, and no label value is a task id.
func TestEveryInMemoryLessonFeedsTheSink(t *testing.T) {
	for _, l := range lessons.All {
		if l.InMem == nil {
			continue
		}
		t.Run(l.ID, func(t *testing.T) {
			events, _ := lessontest.RunInMem(t, l, lesson.Options{})
			m := metrics.New()
			kinds := map[lab.Kind]float64{}
			tasks := map[string]bool{}
			for _, e := range events {
				m.Emit(e)
				kinds[e.Kind]++
				tasks[e.Task] = true
			}
			families, err := m.Registry().Gather()
			require.NoError(t, err)
			sums := map[string]float64{}
			for _, f := range families {
				for _, metric := range f.GetMetric() {
					sums[f.GetName()] += metric.GetCounter().GetValue() + float64(metric.GetHistogram().GetSampleCount())
					for _, label := range metric.GetLabel() {
						assert.False(t, label.GetValue() != "" && tasks[label.GetValue()],
							"%s{%s=%q} names a task", f.GetName(), label.GetName(), label.GetValue())
					}
				}
			}
			assert.Equal(t, kinds[lab.Succeeded], sums[metrics.AckTotal], "acks")
			assert.Equal(t, kinds[lab.Failed], sums[metrics.NackTotal], "nacks")
			assert.Equal(t, kinds[lab.Redelivered], sums[metrics.RedeliveryTotal], "redeliveries")
			assert.Equal(t, kinds[lab.Succeeded]+kinds[lab.Failed], sums[metrics.ConsumeDuration], "one duration per attempt")
			assert.Equal(t, kinds[lab.Started], sums[metrics.WaitTime],
				"one wait per attempt: every start follows the task's arrival in that queue")
			started, arrived := m.Kept()
			assert.Zero(t, started, "no attempt left open after the summaries")
			assert.Zero(t, arrived, "no arrival kept after the summaries")
		})
	}
}

// TestBothBackendsReportTheSameSeries runs Q10 on both backends, the
// broker's run with the metrics attached live as a sink: the same metric
// names with the same queue labels on both, and each backend's acks agree
// with its own stream.
func TestBothBackendsReportTheSameSeries(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Q10 on the broker")
	}
	series := map[lab.Backend][]string{}
	for _, b := range []lab.Backend{lab.InMem, lab.Rabbit} {
		m := metrics.New()
		var events []lab.Event
		if b == lab.Rabbit {
			events, _ = lessontest.RunRabbitWith(t, q10.Lesson, lesson.Options{}, m)
		} else {
			events, _ = lessontest.RunInMem(t, q10.Lesson, lesson.Options{})
			for _, e := range events {
				m.Emit(e)
			}
		}
		succeeded := 0.0
		for _, e := range events {
			if e.Kind == lab.Succeeded {
				succeeded++
			}
		}
		families, err := m.Registry().Gather()
		require.NoError(t, err)
		acks := 0.0
		for _, f := range families {
			for _, metric := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range metric.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				series[b] = append(series[b], f.GetName()+"{queue="+labels["queue"]+"}")
				assert.Equal(t, string(b), labels["backend"])
				if f.GetName() == metrics.AckTotal {
					acks += metric.GetCounter().GetValue()
				}
			}
		}
		assert.Equal(t, succeeded, acks, "%s: acks", b)
	}
	assert.ElementsMatch(t, series[lab.InMem], series[lab.Rabbit])
}
