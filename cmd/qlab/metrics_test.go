package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/metrics"
)

var scrapeLine = regexp.MustCompile(`metrics: scrape (http://\S+/metrics)`)

// waitFor polls buf until re matches (bounded) and returns its first group.
func waitFor(t *testing.T, buf *syncBuffer, re *regexp.Regexp, what string) string {
	t.Helper()
	var got []string
	require.Eventually(t, func() bool {
		got = re.FindStringSubmatch(buf.String())
		return got != nil
	}, 30*time.Second, 10*time.Millisecond, "%s; stderr so far:\n%s", what, buf.String())
	if len(got) > 1 {
		return got[1]
	}
	return got[0]
}

// scrapeFamilies GETs url and parses the Prometheus text format.
func scrapeFamilies(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// total sums a counter family over its series.
func total(f *dto.MetricFamily) float64 {
	sum := 0.0
	for _, m := range f.GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

// TestRunMetricsServesTheRunsCountsUntilCtrlC runs lesson 1 with
// --metrics on a free loopback port and --metrics-hold: after the run the
// scrape parses, its acks and nacks are the run's own succeeded and failed
// events (read from its --json stream), every series is labelled with the
// lesson and backend; Ctrl-C then ends qlab cleanly and the port closes.
func TestRunMetricsServesTheRunsCountsUntilCtrlC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, []string{"run", "1", "--json", "--speed", "100",
			"--metrics", "127.0.0.1:0", "--metrics-hold"}, &stdout, &stderr)
	}()
	url := waitFor(t, &stderr, scrapeLine, "qlab says where to scrape")
	waitFor(t, &stderr, regexp.MustCompile("the run ended; still serving"), "the run ends and /metrics stays")

	kinds := map[lab.Kind]float64{}
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	for sc.Scan() {
		var e lab.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		kinds[e.Kind]++
	}
	require.NotZero(t, kinds[lab.Failed], "lesson 1 fails some attempts")

	got := scrapeFamilies(t, url)
	assert.Equal(t, kinds[lab.Succeeded], total(got[metrics.AckTotal]), "acks")
	assert.Equal(t, kinds[lab.Failed], total(got[metrics.NackTotal]), "nacks")
	require.Contains(t, got, metrics.ConsumeDuration)
	for _, m := range got[metrics.AckTotal].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		assert.Equal(t, "q01", labels["lesson"])
		assert.Equal(t, "inmem", labels["backend"])
	}

	cancel() // Ctrl-C
	select {
	case c := <-code:
		assert.Equal(t, exitOK, c, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("qlab did not end after Ctrl-C")
	}
	_, err := http.Get(url)
	assert.Error(t, err, "/metrics is closed once qlab ends")
}

// TestRunMetricsClosesWhenTheRunEnds: without --metrics-hold, qlab run
// returns at the end of the run and /metrics is gone with it.
func TestRunMetricsClosesWhenTheRunEnds(t *testing.T) {
	code, _, errOut := qlab("run", "1", "--json", "--speed", "100", "--metrics", "127.0.0.1:0")
	require.Equal(t, exitOK, code, errOut)
	url := scrapeLine.FindStringSubmatch(errOut)
	require.NotNil(t, url, "qlab says where to scrape:\n%s", errOut)
	assert.Contains(t, errOut, "until the run ends")
	_, err := http.Get(url[1])
	assert.Error(t, err, "/metrics closed with the run")
}

// TestMetricsRefusesAPublicAddress: an address other machines reach is a
// usage error (exit 2, before any run) on qlab run and qlab tui, unless
// --metrics-public asks for it; the companions need --metrics.
func TestMetricsRefusesAPublicAddress(t *testing.T) {
	for _, args := range [][]string{
		{"run", "1", "--metrics", "0.0.0.0:0"},
		{"run", "1", "--metrics", ":0"},
		{"tui", "1", "--metrics", "0.0.0.0:0"},
	} {
		code, out, errOut := qlab(args...)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.Contains(t, errOut, "--metrics-public", "%v", args)
		assert.Empty(t, out, "%v: nothing ran", args)
	}
	for _, args := range [][]string{
		{"run", "1", "--metrics-hold"},
		{"run", "1", "--metrics-public"},
		{"run", "1", "--metrics", "9100"},
	} {
		code, _, errOut := qlab(args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
	code, _, errOut := qlab("run", "1", "--json", "--speed", "100", "--metrics", "0.0.0.0:0", "--metrics-public")
	assert.Equal(t, exitOK, code, errOut)
	assert.Contains(t, errOut, "metrics: scrape http://")
}
