package q22

import (
	"fmt"

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

// brokerFiguresTable says where the broker's own figures are.
func brokerFiguresTable() render.Table {
	return render.Table{Title: "The broker's own figures", Header: []string{"where", "how"},
		Rows: [][]string{{"rabbitmq_prometheus", "not on the shared node; `qlab broker cluster up` " +
			"starts nodes that serve it (rabbitmq_queue_messages_ready, …_unacked)"}}}
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
