package q22

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/rabbit"
)

// PrometheusEnv names the broker's rabbitmq_prometheus endpoint (its base,
// http://host:port). Unset, Q22 looks on the broker's host at the AMQP
// port + PrometheusOffset.
const PrometheusEnv = "QLAB_RABBITMQ_PROMETHEUS_URL"

// PrometheusOffset is how far rabbitmq_prometheus's port is above AMQP's
// by RabbitMQ's defaults (15692, 5672); scripts/rabbitmq.sh keeps it for
// its 4.3 node (15693, 5673).
const PrometheusOffset = 15692 - 5672

// Families are the /metrics/detailed families Q22 reads: per queue, its
// messages ready and unacked, its consumers, and the deliveries, acks and
// publishes the channels that used it counted (RabbitMQ 4.3.6's names).
var Families = []string{"queue_coarse_metrics", "queue_consumer_count",
	"queue_delivery_metrics", "queue_exchange_metrics"}

// promSettle bounds, in real time, the wait for the broker's figures to
// show a state the run is in: queues and channels emit them every
// collect_statistics_interval (5 s by default), so they trail the broker.
const promSettle = 15 * time.Second

// QueueFigures are one queue's figures on /metrics/detailed, without their
// rabbitmq_detailed_ prefix.
type QueueFigures struct {
	Seen        bool    // the endpoint listed the queue
	Ready       float64 // queue_messages_ready
	Unacked     float64 // queue_messages_unacked
	Consumers   float64 // queue_consumers
	Published   float64 // queue_exchange_messages_published_total
	Delivered   float64 // queue_messages_delivered_ack_total
	Redelivered float64 // queue_messages_redelivered_total
	Acked       float64 // queue_messages_acked_total
}

// brokerView reads the run's queues' figures from the broker's
// rabbitmq_prometheus. Absent says why it cannot, for the table ("" when
// it can).
type brokerView struct {
	base, vhost string
	names       rabbit.Names
	client      http.Client
	absent      string
	unsettled   []string // the reads that never showed the state awaited
}

// newBrokerView finds the endpoint of the run's broker; nil in memory.
func newBrokerView(b flow.Backend) *brokerView {
	s, err := rabbit.SessionOf(b)
	if err != nil {
		return nil
	}
	// A read every few seconds gains nothing from a kept-alive
	// connection, and a pooled one would outlive the run.
	client := http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	}
	v := &brokerView{names: s.Names, client: client}
	v.base, v.vhost, err = PrometheusBase(s.URL)
	if err != nil {
		v.absent = "not read: " + err.Error()
	}
	return v
}

// PrometheusBase is where the broker at amqpURL serves rabbitmq_prometheus
// (PrometheusEnv, or its host at the AMQP port + PrometheusOffset), and
// the broker's vhost.
func PrometheusBase(amqpURL string) (base, vhost string, err error) {
	uri, err := amqp.ParseURI(amqpURL)
	if err != nil {
		return "", "", errors.New("the broker's URL does not parse")
	}
	base = "http://" + net.JoinHostPort(uri.Host, strconv.Itoa(uri.Port+PrometheusOffset))
	if env := strings.TrimSpace(os.Getenv(PrometheusEnv)); env != "" {
		base = strings.TrimSuffix(env, "/")
	}
	return base, uri.Vhost, nil
}

// where is the endpoint for a student to read: never its credentials.
func (v *brokerView) where() string {
	u, err := url.Parse(v.base)
	if err != nil {
		return "(" + PrometheusEnv + " does not parse)"
	}
	u.User = nil
	return u.String() + "/metrics/detailed"
}

// scrape reads the figures of the run's queues, keyed by seed name.
func (v *brokerView) scrape(ctx context.Context) (map[string]QueueFigures, error) {
	q := url.Values{"vhost": {v.vhost}, "family": Families}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.base+"/metrics/detailed?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	figs := map[string]QueueFigures{}
	for _, name := range []string{Queue, RetryWait, DLQ, Held} {
		figs[name] = QueueFigures{}
	}
	fields := map[string]func(*QueueFigures) *float64{
		"queue_messages_ready":                    func(f *QueueFigures) *float64 { return &f.Ready },
		"queue_messages_unacked":                  func(f *QueueFigures) *float64 { return &f.Unacked },
		"queue_consumers":                         func(f *QueueFigures) *float64 { return &f.Consumers },
		"queue_exchange_messages_published_total": func(f *QueueFigures) *float64 { return &f.Published },
		"queue_messages_delivered_ack_total":      func(f *QueueFigures) *float64 { return &f.Delivered },
		"queue_messages_redelivered_total":        func(f *QueueFigures) *float64 { return &f.Redelivered },
		"queue_messages_acked_total":              func(f *QueueFigures) *float64 { return &f.Acked },
	}
	for name, field := range fields {
		for _, m := range families["rabbitmq_detailed_"+name].GetMetric() {
			seed, ok := v.ours(m)
			if !ok {
				continue
			}
			f := figs[seed]
			f.Seen = true
			*field(&f) += m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			figs[seed] = f
		}
	}
	return figs, nil
}

// ours says which of the run's queues a series is about: only those. The
// node's rabbitmq_global_* counters count every client of the broker.
func (v *brokerView) ours(m *dto.Metric) (string, bool) {
	for _, l := range m.GetLabel() {
		if l.GetName() != "queue" {
			continue
		}
		for _, seed := range []string{Queue, RetryWait, DLQ, Held} {
			if l.GetValue() == v.names.Of(seed) {
				return seed, true
			}
		}
	}
	return "", false
}

// await scrapes until the figures show the state done awaits, bounded by
// promSettle, and returns the last read. A first read that fails makes
// the view absent: the run goes on without the broker's figures.
func (v *brokerView) await(ctx context.Context, what string, done func(map[string]QueueFigures) bool) map[string]QueueFigures {
	if v == nil || v.absent != "" {
		return nil
	}
	var last map[string]QueueFigures
	ok, err := rabbit.PollUntil(ctx, 250*time.Millisecond, promSettle, func() (bool, error) {
		figs, err := v.scrape(ctx)
		if err != nil {
			return false, err
		}
		last = figs
		return done(figs), nil
	})
	switch {
	case err != nil && last == nil:
		v.absent = "not served: " + oneLine(err.Error())
		var op *net.OpError
		if errors.As(err, &op) {
			v.absent = "not served: nothing answers (" + oneLine(op.Err.Error()) + ")"
		}
		return nil
	case !ok:
		v.unsettled = append(v.unsettled, what)
	}
	return last
}
