package check

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Exposition is what a registry served on /metrics: the text a
// Prometheus server reads, and its metric families parsed back.
type Exposition struct {
	Text     string
	Families map[string]*dto.MetricFamily
}

// Scrape serves g as `qlab run --metrics` does (promhttp, the text
// format) on a loopback test server, GETs /metrics and parses what came
// back with expfmt. Call it outside a synctest bubble: it uses the network.
func Scrape(g prometheus.Gatherer) (Exposition, error) {
	srv := httptest.NewServer(promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		return Exposition{}, err
	}
	req.Header.Set("Accept", "text/plain") // the text format, not protobuf
	resp, err := srv.Client().Do(req)
	if err != nil {
		return Exposition{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Exposition{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return Exposition{Text: string(body)}, fmt.Errorf("/metrics answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return Exposition{Text: string(body)}, fmt.Errorf("the /metrics text does not parse: %w", err)
	}
	return Exposition{Text: string(body), Families: families}, nil
}

// Lines returns the exposition's lines about metric name (its HELP, TYPE
// and samples; of a histogram its _sum and _count, not every _bucket), at
// most TranscriptLines of them: what a failed check about name shows.
func (x Exposition) Lines(name string) []string {
	var out []string
	for _, l := range strings.Split(x.Text, "\n") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimPrefix(l, "# HELP "), "# TYPE "))
		if len(fields) == 0 {
			continue
		}
		metric, _, _ := strings.Cut(fields[0], "{")
		if metric == name+"_bucket" {
			continue
		}
		if metric == name || strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(metric, "_bucket"), "_sum"), "_count") == name {
			out = append(out, l)
		}
	}
	if len(out) > TranscriptLines {
		out = append(out[:TranscriptLines], "…")
	}
	return out
}
