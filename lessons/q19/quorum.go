package q19

import (
	"context"
	"fmt"
	"strings"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/versions"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// Part (b) on a quorum queue. A classic queue only sets the redelivered
// flag on a requeued message; a quorum queue also counts returns in
// x-delivery-count, so a worker could read its retry count there. Whether
// the fake delay's basic.nack counts depends on the version: 3.10.8
// counts every return, 4.3 only a failed delivery (a reject, a closed
// channel), never a nack. The lesson measures it on the broker it runs on.

// quorumRounds is how many times the probe gives one message back.
const quorumRounds = 3

// quorumReturns gives one message per way back to a quorum queue of the
// run's quorumRounds times and reports what each delivery read.
func quorumReturns(ctx context.Context, env *lesson.Env) (render.Table, error) {
	env.Phase("(b) the same nack on a quorum queue: what x-delivery-count reads")
	b, err := env.Open(ctx)
	if err != nil {
		return render.Table{}, err
	}
	defer env.Close(ctx, b)
	s, err := rabbit.SessionOf(b)
	if err != nil {
		return render.Table{}, err
	}
	rs, err := s.Probes().Returns(ctx, quorumRounds)
	if err != nil {
		return render.Table{}, err
	}
	return quorumTable(flow.FactsOf(b).Version, rs), nil
}

// quorumTable shows what each delivery of a message given back read.
func quorumTable(version string, rs []rabbit.Returned) render.Table {
	t := render.Table{
		Title: fmt.Sprintf("(b) The fake delay's nack on a quorum queue: one message given back %d times (RabbitMQ %s)",
			quorumRounds, version),
		Header: []string{"given back by", rabbit.DeliveryCountHeader, rabbit.AcquiredCountHeader},
		Notes: []string{
			"Each column reads the header on every delivery, the first one included (- absent: the broker wrote none).",
			"The timer before the nack is a basic.nack with requeue: where that leaves x-delivery-count unwritten, " +
				"a worker reading its retry count from it reads 0 every time, as with a classic queue.",
			versions.QuorumReturns.Note(version),
		},
	}
	for _, r := range rs {
		t.Rows = append(t.Rows, []string{string(r.Way), counts(r.DeliveryCount), counts(r.Acquired)})
	}
	return t
}

// counts is a header read on each delivery: "0 1 2 3", "- 1 2 3".
func counts(ns []int64) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = "-"
		if n >= 0 {
			out[i] = fmt.Sprint(n)
		}
	}
	return strings.Join(out, " ")
}
