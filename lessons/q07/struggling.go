package q07

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/q04"
	"github.com/queuelab/qlab/render"
)

// Why a struggling service cares, measured: the service every attempt
// calls is down for the first q07Outage of a run, and the four tasks A–D
// (none poison) go through lesson 4's chain, which retries at once, and
// through this lesson's, which waits 1 s, then 2 s. Each run has a stream
// and a clock of its own (q07MeasureSpeed; exact under go test).
const (
	q07Outage       = 2500 * time.Millisecond
	q07MeasureSpeed = 20
)

var q07ComparePlan = lab.Plan{Tasks: []string{"A", "B", "C", "D"}, Work: 100 * time.Millisecond}

// q07Run is one design against the outage.
type q07Run struct {
	name  string
	start func(ctx context.Context, env *lesson.Env, svc *inmem.MailService) error
}

var q07Runs = []q07Run{
	{"retry at once (lesson 4's chain)", func(ctx context.Context, env *lesson.Env, svc *inmem.MailService) error {
		sys := inmem.New(ctx, env.Stream, env.Plan)
		sys.Process = func(ctx context.Context, t *inmem.Task) error { return svc.Send(ctx, t.ID, t.Attempt) }
		room := len(env.Plan.Tasks) + 1
		queue := sys.Queue("queue", room)
		q04.StartRetryChain(sys, queue, 2, room)
		for _, id := range env.Plan.Tasks {
			queue.Enqueue("Producer", id)
		}
		return sys.Wait(ctx)
	}},
	{"wait 1 s, then 2 s (this lesson)", func(ctx context.Context, env *lesson.Env, svc *inmem.MailService) error {
		chain := NewChain(ctx, env)
		chain.Sys.Process = func(ctx context.Context, t *inmem.Task) error { return svc.Send(ctx, t.ID, t.Attempt) }
		return chain.Run(ctx, env, func(actor string, from *inmem.Queue, t *inmem.Task) {
			chain.Sys.Drop(actor, t, from.Name(), "all retries failed")
		})
	}},
}

// q07Struggling runs both designs against the outage and tabulates how
// hard each hit the service while it was down, and what became of the
// tasks.
func q07Struggling(ctx context.Context, env *lesson.Env) (render.Table, error) {
	t := render.Table{
		Title:  fmt.Sprintf("A service that is down for the first %v: retry at once, or back off (measured)", q07Outage),
		Header: []string{"design", "calls while it was down", "calls in all", "done", "dropped"},
		Notes: []string{
			"Tasks A–D, none poison, three attempts each; every attempt calls the service, which fails every call for the first 2.5 s of the run.",
			"Retrying at once spends all three attempts inside the outage, adds load to a service that is trying to recover, and drops every task; " +
				"waiting 1 s, then 2 s, gives it time: the last attempts land after it is back.",
			fmt.Sprintf("Each design on a stream of its own, its clock at %d× (exact under go test).", q07MeasureSpeed),
		},
	}
	for _, r := range q07Runs {
		var rec lab.Recorder
		side := &lesson.Env{Stream: lab.NewStream(env.Stream.Lesson(), lab.InMem, lab.NewClock(q07MeasureSpeed), &rec), Plan: q07ComparePlan, Options: lesson.Options{Consumers: 1}}
		svc := inmem.NewMailService(side.Stream.Clock(), inmem.Outage{Until: q07Outage}, side.Plan)
		if err := r.start(ctx, side, svc); err != nil {
			return t, err
		}
		fates := map[lab.Fate]int{}
		for _, rec := range side.Stream.Finish() {
			fates[rec.Fate]++
		}
		st := svc.Stats()
		t.Rows = append(t.Rows, []string{r.name, fmt.Sprint(st.CallsDown), fmt.Sprint(st.Calls), fmt.Sprint(fates[lab.FateDone]), fmt.Sprint(fates[lab.FateDropped])})
	}
	return t, nil
}
