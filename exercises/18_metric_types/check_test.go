//go:build qlabex

package metrictypes

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lessons/q22"
)

// scenario is one run: tasks on the birthday queue, which fail as plan
// says (every first attempt, in an outage), and tasks on a second queue
// that always succeed. Two queues, so a series per queue is checked.
type scenario struct {
	name   string
	plan   lab.Plan
	outage bool // every first attempt fails, after a 300 ms timeout
	held   int  // tasks on the second queue
}

var scenarios = []scenario{
	{name: "the lesson's outage: every first attempt fails",
		plan: tasks("m", 10, 0, 0), outage: true, held: 5},
	{name: "seed 7: 30 % transient failures, m03 poison",
		plan: tasks("m", 12, 7, 0.3, "m03"), held: 4},
	{name: "seed 12: 30 % transient failures, m02 and m09 poison",
		plan: tasks("m", 9, 12, 0.3, "m02", "m09"), held: 7},
}

// tasks is a plan of n tasks prefix01 … with poison ones, 100 ms each.
func tasks(prefix string, n int, seed int64, rate float64, poison ...string) lab.Plan {
	p := lab.Plan{Work: 100 * time.Millisecond, Seed: seed, FailRate: rate, Poison: poison}
	for i := 1; i <= n; i++ {
		p.Tasks = append(p.Tasks, fmt.Sprintf("%s%02d", prefix, i))
	}
	return p
}

const (
	heldWork = 50 * time.Millisecond  // an attempt on the second queue
	timeout  = 300 * time.Millisecond // an attempt in the outage
)

// The four metrics, the type each must have, and the check that says so.
var types = []struct {
	name, job string
	want      dto.MetricType
}{
	{ConsumeDuration, "a duration is a histogram: " + ConsumeDuration, dto.MetricType_HISTOGRAM},
	{AckTotal, totalCheck, dto.MetricType_COUNTER},
	{NackTotal, totalCheck, dto.MetricType_COUNTER},
	{Depth, "a level is a gauge, it goes down as well as up: " + Depth, dto.MetricType_GAUGE},
}

const totalCheck = "a total is a counter: " + AckTotal + ", " + NackTotal

func TestMetricTypes(t *testing.T) {
	c := check.New(t)
	for _, sc := range scenarios {
		reg := prometheus.NewRegistry()
		m, err := newMetrics(reg)
		if !c.That(check.Run{Name: sc.name}, servedCheck, err == nil, fmt.Sprint(err),
			"New registers its metrics on reg and returns", "") {
			return
		}
		w := &worker{m: m, depths: map[string]int{}}
		all := append(slices.Clone(sc.plan.Tasks), heldTasks(sc.held)...)
		plan := sc.plan
		plan.Tasks = all
		r := check.InMem(t, check.Named{Name: sc.name, Plan: plan}, func(ctx context.Context, s *lab.Stream) error {
			return w.run(ctx, s, sc)
		})
		c.Accounted(r, lab.FateDone, lab.FateDead)
		x, err := check.Scrape(reg)
		if !c.That(r, "/metrics serves the registry in the text format", err == nil, fmt.Sprint(err),
			"a page Prometheus can parse", "") {
			return
		}
		judge(c, r, x, w)
	}
}

// servedCheck is the first check: each metric is on the registry New got.
const servedCheck = "the four metrics are served from the registry New is given"

// newMetrics calls New, turning a panic (registering twice on the global
// registry, or one name for two metrics) into an error.
func newMetrics(reg prometheus.Registerer) (m *Metrics, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("New panicked: %v", p)
		}
	}()
	return New(reg), nil
}

func heldTasks(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("h%02d", i))
	}
	return out
}

// worker runs the two consumers and calls the student's methods: Handled
// after every attempt, Depth with the queue's depth after every decision
// and, at the end, of every queue.
type worker struct {
	m *Metrics

	mu     sync.Mutex
	depths map[string]int // the last depth reported for each queue
}

func (w *worker) run(ctx context.Context, s *lab.Stream, sc scenario) error {
	b := inmem.NewFlow(ctx, s, 64)
	defer b.Close(context.Background())
	if err := b.Declare(ctx, q22.Topology); err != nil {
		return err
	}
	clock := s.Clock()
	policy := flow.Retries{Via: q22.RetryWait, DLQ: q22.DLQ, Max: 3}
	consumer := func(queue, actor string, work func(d *flow.Delivery) (time.Duration, error)) flow.Consumer {
		return flow.Consumer{Queue: queue, Actor: actor, Handle: func(ctx context.Context, d *flow.Delivery) flow.Decision {
			start := clock.Elapsed()
			err := s.Attempt(d.Event(actor), func() error {
				took, err := work(d)
				return firstErr(clock.Wait(ctx, took), err)
			})
			w.m.Handled(d, clock.Elapsed()-start, err)
			dec := policy.Decide(d, err)
			w.depth(ctx, b, queue)
			return dec
		}}
	}
	birthday := consumer(q22.Queue, "Birthday-Worker", func(d *flow.Delivery) (time.Duration, error) {
		if sc.outage && d.Attempt == 1 {
			return timeout, q22.ErrOutage
		}
		return sc.plan.WorkTime(d.Task, d.Attempt), sc.plan.Fails(d.Task, d.Attempt)
	})
	held := consumer(q22.Held, "Held-Worker", func(*flow.Delivery) (time.Duration, error) { return heldWork, nil })
	for _, c := range []flow.Consumer{birthday, held} {
		if err := b.Consume(ctx, c); err != nil {
			return err
		}
	}
	for _, id := range sc.plan.Tasks {
		if err := b.Publish(ctx, "Scheduler", q22.Queue, id); err != nil {
			return err
		}
	}
	for _, id := range heldTasks(sc.held) {
		if err := b.Publish(ctx, "Scheduler", q22.Held, id); err != nil {
			return err
		}
	}
	w.depth(ctx, b, q22.Queue)
	err := b.Wait(ctx)
	for _, q := range []string{q22.Queue, q22.Held, q22.DLQ} {
		w.depth(ctx, b, q)
	}
	return err
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// depth reads queue's depth and hands it to the student's Depth.
func (w *worker) depth(ctx context.Context, b *inmem.Flow, queue string) {
	n, err := b.Depth(ctx, queue)
	if err != nil {
		return
	}
	w.mu.Lock()
	w.depths[queue] = n
	w.mu.Unlock()
	w.m.Depth(queue, n)
}

// judge checks what was served against what the run's events say.
func judge(c *check.Checker, r check.Run, x check.Exposition, w *worker) {
	var missing []string
	for _, ty := range types {
		if x.Families[ty.name] == nil {
			missing = append(missing, ty.name)
		}
	}
	if !c.ThatShowing(r, servedCheck, len(missing) == 0,
		fmt.Sprintf("%d of the four served; missing %s", len(types)-len(missing), strings.Join(missing, ", ")),
		"all four on the registry New was given", firstLines(x.Text)) {
		return
	}
	typesOK := true
	for _, ty := range types {
		got := x.Families[ty.name].GetType()
		typesOK = c.ThatShowing(r, ty.job, got == ty.want,
			fmt.Sprintf("%s is a %s", ty.name, typeName(got)), fmt.Sprintf("%s is a %s", ty.name, typeName(ty.want)),
			x.Lines(ty.name)) && typesOK
	}
	if !typesOK {
		return
	}
	if !labels(c, r, x) {
		return
	}
	want := expected(r)
	for _, q := range []string{q22.Queue, q22.Held} {
		e := want[q]
		acks, nacks := value(x, AckTotal, q), value(x, NackTotal, q)
		c.ThatShowing(r, "acks and nacks count the attempts, one each, per queue",
			acks == float64(e.acks) && nacks == float64(e.nacks),
			fmt.Sprintf("%s: %g acks, %g nacks", q, acks, nacks),
			fmt.Sprintf("%s: %d acks, %d nacks (its succeeded and failed attempts)", q, e.acks, e.nacks),
			append(x.Lines(AckTotal), x.Lines(NackTotal)...))
		h := histogram(x, q)
		c.ThatShowing(r, "the consume duration: one observation per attempt, in seconds",
			h.GetSampleCount() == uint64(e.acks+e.nacks) && math.Abs(h.GetSampleSum()-e.seconds) < 1e-6,
			fmt.Sprintf("%s: %d observations, sum %g", q, h.GetSampleCount(), h.GetSampleSum()),
			fmt.Sprintf("%s: %d observations, sum %g (seconds)", q, e.acks+e.nacks, e.seconds),
			x.Lines(ConsumeDuration))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, q := range []string{q22.Queue, q22.Held, q22.DLQ} {
		got := value(x, Depth, q)
		c.ThatShowing(r, "the depth reads what the queue holds now: set, not added up",
			got == float64(w.depths[q]), fmt.Sprintf("%s: depth %g", q, got),
			fmt.Sprintf("%s: depth %d, the last depth Depth was given", q, w.depths[q]), x.Lines(Depth))
	}
}

// labels checks that every series of the four is labelled by the queue
// alone, with a queue's name: a bounded number of series.
func labels(c *check.Checker, r check.Run, x check.Exposition) bool {
	queues := map[string]bool{}
	for _, q := range q22.Topology.Queues {
		queues[q.Name] = true
	}
	ok := true
	for _, ty := range types {
		series := x.Families[ty.name].GetMetric()
		bad := ""
		for _, s := range series {
			names, values := labelsOf(s)
			switch {
			case len(names) != 1 || names[0] != QueueLabel:
				bad = fmt.Sprintf("%s has labels {%s}: %d series", ty.name, strings.Join(names, ", "), len(series))
			case !queues[values[0]]:
				bad = fmt.Sprintf("%s has %s=%q, not a queue's name", ty.name, QueueLabel, values[0])
			}
			if bad != "" {
				break
			}
		}
		ok = c.ThatShowing(r, "one label, the queue: never a task id or a body (bounded series)", bad == "",
			bad, fmt.Sprintf("%s labelled {%s} alone: one series per queue", ty.name, QueueLabel), x.Lines(ty.name)) && ok
	}
	return ok
}

func labelsOf(s *dto.Metric) (names, values []string) {
	ls := s.GetLabel()
	sort.Slice(ls, func(i, j int) bool { return ls[i].GetName() < ls[j].GetName() })
	for _, l := range ls {
		names, values = append(names, l.GetName()), append(values, l.GetValue())
	}
	return names, values
}

// counts are what the events say about one queue's attempts.
type counts struct {
	acks, nacks int
	seconds     float64 // lesson time of every attempt, summed
}

// expected reads each queue's attempts from the run's events: a started
// event and the succeeded or failed one that ends it.
func expected(r check.Run) map[string]counts {
	type key struct {
		task    string
		attempt int
	}
	started := map[key]int64{}
	out := map[string]counts{}
	for _, e := range r.Events {
		k := key{e.Task, e.Attempt}
		switch e.Kind {
		case lab.Started:
			started[k] = e.TMs
		case lab.Succeeded, lab.Failed:
			cn := out[e.Queue]
			if e.Kind == lab.Succeeded {
				cn.acks++
			} else {
				cn.nacks++
			}
			cn.seconds += float64(e.TMs-started[k]) / 1000
			out[e.Queue] = cn
		}
	}
	return out
}

// value is the counter's or gauge's value of name on queue (0 if none).
func value(x check.Exposition, name, queue string) float64 {
	for _, s := range x.Families[name].GetMetric() {
		if _, v := labelsOf(s); len(v) == 1 && v[0] == queue {
			if g := s.GetGauge(); g != nil {
				return g.GetValue()
			}
			return s.GetCounter().GetValue()
		}
	}
	return 0
}

// histogram is the consume duration's histogram on queue (empty if none).
func histogram(x check.Exposition, queue string) *dto.Histogram {
	for _, s := range x.Families[ConsumeDuration].GetMetric() {
		if _, v := labelsOf(s); len(v) == 1 && v[0] == queue {
			return s.GetHistogram()
		}
	}
	return &dto.Histogram{}
}

func typeName(t dto.MetricType) string {
	return strings.ToLower(t.String())
}

// firstLines is the start of what /metrics served.
func firstLines(text string) []string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return []string{"(/metrics served nothing)"}
	}
	if len(lines) > check.TranscriptLines {
		lines = append(lines[:check.TranscriptLines], "…")
	}
	return lines
}
