package q22

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lessons/versions"
	"github.com/queuelab/qlab/metrics"
	"github.com/queuelab/qlab/render"
)

// metricsTable is what the metrics said: the run's totals t, the depth the
// trap read, whether the workers' connections were cut, and the rows only
// the backend could report (wire.rows).
func metricsTable(t metrics.Totals, depth int, crashed bool, wired [][]string, facts flow.Facts) render.Table {
	report := render.Table{Title: "What the metrics said", Header: []string{"metric", "value", "what moved it"}}
	report.Rows = append(report.Rows,
		[]string{metrics.NackTotal, fmt.Sprint(t.Nacks), "the outage: every first attempt failed"},
		[]string{metrics.AckTotal, fmt.Sprint(t.Acks), ackWhy(t.Acks)},
		[]string{metrics.RedeliveryTotal, fmt.Sprint(t.Redeliveries), redeliveryWhy(crashed)},
		[]string{metrics.WaitTime, fmt.Sprintf("n=%d, mean %.3f s", t.Waits, t.WaitSeconds/float64(max(t.Waits, 1))),
			"from each arrival in a queue to a worker starting (lesson ms)"},
		[]string{metrics.ConsumeDuration, fmt.Sprintf("n=%d, mean %.3f s", t.Attempts, t.ConsumeSeconds/float64(max(t.Attempts, 1))),
			"each attempt, from a worker starting to its ack or nack (lesson ms)"},
		[]string{metrics.Depth, fmt.Sprintf("%d of %d", depth, Published),
			fmt.Sprintf("%d held unacked by a prefetch-%d consumer are not counted", Published-depth, Prefetch)},
	)
	report.Rows = append(report.Rows, wired...)
	if facts.Broker {
		report.Title += " (RabbitMQ " + facts.Version + ")"
		report.Notes = append(report.Notes, versions.Metrics.Note(facts.Version))
	}
	return report
}

// labFigures are the lab's side of the broker's figures: what the run's
// client counted.
type labFigures struct {
	depth, heldConsumers, published int
	attempts, redeliveries, acks    float64
}

// brokerFiguresTable sets the broker's own figures (rabbitmq_prometheus)
// beside the lab's: the held queue's at the depth trap, the four queues'
// summed at the end of the run. The lab's figures are the client's
// counts; where the broker's differ, the table says why.
func brokerFiguresTable(v *brokerView, lab labFigures, trap, end map[string]QueueFigures, version string) render.Table {
	t := render.Table{Title: "The broker's own figures (rabbitmq_prometheus, RabbitMQ " + version + ")",
		Header: []string{"rabbitmq_detailed_…", "lab", "broker", "so"}}
	if v.absent == "" && !trap[Held].Seen && !anySeen(end) {
		v.absent = "lists none of this run's queues (a node serves only its own queues' figures: " +
			"is it this broker's?)"
	}
	if v.absent != "" {
		t.Title = "The broker's own figures"
		t.Header = []string{"where", "what"}
		t.Rows = [][]string{{v.where(), v.absent}}
		t.Notes = []string{"Enable it on the broker (rabbitmq-plugins enable rabbitmq_prometheus; " +
			"scripts/rabbitmq.sh's 4.3 node serves it on 15693), or point " + PrometheusEnv + " at it."}
		return t
	}
	agree := func(same bool, why, otherwise string) string {
		if same {
			return "agree" + why
		}
		return otherwise
	}
	n := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	held := trap[Held]
	var sum QueueFigures
	left := 0.0
	for _, f := range end {
		sum.Published += f.Published
		sum.Delivered += f.Delivered
		sum.Redelivered += f.Redelivered
		sum.Acked += f.Acked
		left += f.Ready + f.Unacked
	}
	lost := lab.acks - sum.Acked
	t.Rows = [][]string{
		{"queue_messages_ready, held", fmt.Sprint(lab.depth), n(held.Ready),
			agree(held.Ready == float64(lab.depth), ": the depth is ready only", "differ")},
		{"queue_messages_unacked, held", "-", n(held.Unacked), "what the depth leaves out"},
		{"queue_consumers, held", fmt.Sprint(lab.heldConsumers), n(held.Consumers),
			agree(held.Consumers == float64(lab.heldConsumers), "", "differ")},
		{"queue_exchange_messages_published_total", fmt.Sprint(lab.published), n(sum.Published),
			agree(sum.Published == float64(lab.published), ": a retry dead-lettered back is no publish", "differ")},
		{"queue_messages_delivered_ack_total", n(lab.attempts), n(sum.Delivered),
			agree(sum.Delivered == lab.attempts, ": one delivery per attempt", by(sum.Delivered-lab.attempts,
				"%s more: deliveries a cut connection lost before a worker took them"))},
		{"queue_messages_redelivered_total", n(lab.redeliveries), n(sum.Redelivered),
			agree(sum.Redelivered == lab.redeliveries, "", "differ")},
		{"queue_messages_acked_total", n(lab.acks), n(sum.Acked),
			agree(lost == 0, "", by(lost, "%s fewer: acks sent on a cut connection never arrived"))},
		{"queue_messages_ready + _unacked", "0", n(left), agree(left == 0, ": every task done", "differ")},
	}
	t.Notes = []string{
		"Read from " + v.where() + " (families " + strings.Join(Families, ", ") +
			"), for this run's queues only: held is the held queue at the depth trap, with five " +
			"messages in its consumer's hands; the other rows are the four queues summed at the " +
			"end of the run. The lab's figures are its workers' counts (attempts, acks sent); the " +
			"broker's are what its channels counted. The node-wide rabbitmq_global_* counters count " +
			"every client of the broker, so they are not compared.",
		fmt.Sprintf("Queues and channels emit these figures every collect_statistics_interval "+
			"(5 s by default), so they trail the broker: the lesson read them until the held queue "+
			"showed all %d messages, and at the end until every queue was empty and every task's "+
			"message acked once, up to %s each.", Published, promSettle),
	}
	if len(v.unsettled) > 0 {
		t.Notes = append(t.Notes, "Never settled within the bound: "+strings.Join(v.unsettled, ", ")+
			": the figures above are the last read.")
	}
	return t
}

// by is why, for a difference d > 0 the lesson knows the cause of;
// another is a plain "differ".
func by(d float64, why string) string {
	if d > 0 {
		return fmt.Sprintf(why, strconv.FormatFloat(d, 'f', -1, 64))
	}
	return "differ"
}

// anySeen says whether the endpoint listed any of the run's queues.
func anySeen(figs map[string]QueueFigures) bool {
	for _, f := range figs {
		if f.Seen {
			return true
		}
	}
	return false
}

// ackWhy says what the ack count is: one per task, or more where a cut
// connection lost an ack the worker had sent, and the broker delivered the
// message again (the counter counts successful attempts, not acks the
// broker received).
func ackWhy(acks float64) string {
	if n := int(acks) - 2*Published; n > 0 {
		return fmt.Sprintf("%d more than tasks: a cut connection lost %d ack(s) sent, and the "+
			"message came again", n, n)
	}
	return "one successful attempt per task"
}

func redeliveryWhy(crashed bool) string {
	if crashed {
		return "the workers' connections were cut: the broker handed their unacked messages out again"
	}
	return "none: in memory a crash loses what memory held instead (qlab run 22 on the broker)"
}
