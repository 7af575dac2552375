package q22

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/metrics"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// allNames are seed 003's eleven metric names.
var allNames = []string{metrics.PublishDuration, metrics.ConsumeDuration, metrics.WaitTime,
	metrics.AckTotal, metrics.NackTotal, metrics.RedeliveryTotal, metrics.ChannelOpens,
	metrics.ChannelCloses, metrics.Depth, metrics.ConsumersActive, metrics.ConnectionStatus}

// scrape serves m as `qlab run --metrics` does and reads /metrics back.
func scrape(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	srv, err := metrics.Serve(m, "127.0.0.1:0", metrics.ServeOptions{})
	require.NoError(t, err)
	defer func() { _ = srv.Close(context.Background()) }()
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(srv.URL())
	require.NoError(t, err)
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// moved reports whether the family has a series that moved: a counter
// above 0, a histogram with observations, a gauge that was set (a gauge
// vector has no series until set).
func moved(f *dto.MetricFamily) bool {
	for _, s := range f.GetMetric() {
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			if s.GetCounter().GetValue() > 0 {
				return true
			}
		case dto.MetricType_HISTOGRAM:
			if s.GetHistogram().GetSampleCount() > 0 {
				return true
			}
		case dto.MetricType_GAUGE:
			return true
		}
	}
	return false
}

func value(t *testing.T, families map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f := families[name]
	require.NotNil(t, f, name)
	sum := 0.0
	for _, s := range f.GetMetric() {
		sum += s.GetCounter().GetValue() + s.GetGauge().GetValue()
	}
	return sum
}

// TestEveryNameMovesOnMetricsInMemory: a Metrics given to the run as
// `--metrics` gives it sees ten of the eleven names move in memory; the
// redelivery counter, which needs a broker, is served at 0.
func TestEveryNameMovesOnMetricsInMemory(t *testing.T) {
	m := metrics.New()
	synctest.Test(t, func(t *testing.T) {
		_, err := lesson.Run(context.Background(), Lesson, lesson.Options{Backend: lab.InMem}, m)
		require.NoError(t, err)
	})
	families := scrape(t, m)
	for _, name := range allNames {
		if name == metrics.RedeliveryTotal {
			continue
		}
		if assert.Contains(t, families, name) {
			assert.True(t, moved(families[name]), "%s did not move", name)
		}
	}
	assert.NotContains(t, families, metrics.RedeliveryTotal, "in memory a crash loses tasks: none redelivered")
	assert.Equal(t, 5.0, value(t, families, metrics.Depth), "ready only")
	assert.Equal(t, 2.0, value(t, families, metrics.ChannelOpens))
	assert.Equal(t, 2.0, value(t, families, metrics.ChannelCloses))
	assert.Zero(t, value(t, families, metrics.ConsumersActive), "the workers stopped")
}

// TestEveryNameMovesOnMetricsOnRabbitMQ: on the broker all eleven move on
// /metrics, and every channel the consumers opened was closed by the end.
func TestEveryNameMovesOnMetricsOnRabbitMQ(t *testing.T) {
	for _, line := range []string{"3.10", "4.3"} {
		t.Run(line, func(t *testing.T) {
			url, _ := rabbittest.NeedVersion(t, line)
			m := metrics.New()
			lessontest.RunRabbitWith(t, Lesson, lesson.Options{Broker: url}, m)
			families := scrape(t, m)
			for _, name := range allNames {
				if assert.Contains(t, families, name) {
					assert.True(t, moved(families[name]), "%s did not move", name)
				}
			}
			opens := value(t, families, metrics.ChannelOpens)
			assert.GreaterOrEqual(t, opens, 4.0, "two consumers, each reconnected after the cut")
			assert.Equal(t, opens, value(t, families, metrics.ChannelCloses), "every channel closed by the end")
			assert.Equal(t, 5.0, value(t, families, metrics.Depth), "ready only")
			assert.Zero(t, value(t, families, metrics.ConsumersActive), "none left once the run closed")
			assert.Zero(t, value(t, families, metrics.ConnectionStatus), "every channel closed")
		})
	}
}
