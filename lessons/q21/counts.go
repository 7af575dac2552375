package q21

import (
	"context"
	"fmt"
	"strings"

	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/lessons/versions"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// What counts as a delivery, measured on the cluster's own version: a
// message given back three times each way (nack, reject, a closed
// channel), then the delivery limit a quorum queue gets by default,
// against rejects and against nacks. RabbitMQ 4.3 counts a reject and a
// closed channel but not a nack; 3.10.8 counts all three and has no
// default limit (versions.QuorumReturns, versions.DeliveryLimit).

// countsRounds is how often the probe gives each message back; limitMax
// how many returns it tries against the default limit (past 4.x's 20).
const (
	countsRounds = 3
	limitMax     = 25
)

// whatCounts runs the probes on a session of the run's and reports them.
func (r *runner) whatCounts(ctx context.Context) error {
	r.env.Phase("What counts as a delivery: one message given back by nack, reject or a closed channel; the default limit")
	s, err := rabbitenv.Session(ctx, r.env)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close(ctx) }()
	rs, err := s.Probes().Returns(ctx, countsRounds)
	if err != nil {
		return err
	}
	var limits []string
	for _, way := range []rabbit.Return{rabbit.RejectRequeue, rabbit.NackRequeue} {
		n, gone, err := s.Probes().Limit(ctx, way, limitMax)
		if err != nil {
			return err
		}
		limits = append(limits, limitCell(n, gone))
	}
	r.env.Report(countsTable(rabbit.ServerVersion(s.Connection()), rs, limits))
	return nil
}

// limitCell says what the default limit did: "dropped at delivery 21",
// "still there after 25".
func limitCell(n int, gone bool) string {
	if gone {
		return fmt.Sprintf("dropped at delivery %d", n)
	}
	return fmt.Sprintf("still there after %d", n)
}

// countsTable shows the probes: per way, the counters on each delivery
// and what a queue without x-delivery-limit did (limits: reject, nack).
func countsTable(version string, rs []rabbit.Returned, limits []string) render.Table {
	t := render.Table{
		Title:  fmt.Sprintf("What counts as a delivery: a quorum queue, one message given back %d times (RabbitMQ %s)", countsRounds, version),
		Header: []string{"given back by", rabbit.DeliveryCountHeader, rabbit.AcquiredCountHeader, "no x-delivery-limit set"},
		Notes: []string{
			"Read with basic.get on each delivery, the first included (- absent). The last column gives one " +
				fmt.Sprintf("message back that way up to %d times in a queue declared without x-delivery-limit.", limitMax),
			versions.QuorumReturns.Note(version),
			versions.DeliveryLimit.Note(version),
		},
	}
	limitOf := map[rabbit.Return]string{rabbit.RejectRequeue: limits[0], rabbit.NackRequeue: limits[1]}
	for _, r := range rs {
		limit := limitOf[r.Way]
		if limit == "" {
			limit = "-"
		}
		t.Rows = append(t.Rows, []string{string(r.Way), joinCounts(r.DeliveryCount), joinCounts(r.Acquired), limit})
	}
	return t
}

func joinCounts(ns []int64) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = "-"
		if n >= 0 {
			out[i] = fmt.Sprint(n)
		}
	}
	return strings.Join(out, " ")
}
