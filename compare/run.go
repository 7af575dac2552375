package compare

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/render"
)

// Config chooses how a comparison runs.
type Config struct {
	Speed  float64   // lesson time per real time; default 20
	Plan   *lab.Plan // the main runs' workload; default lab.DefaultPlan()
	Broker string    // AMQP URL of the broker
	// BrokerInfo says which broker was found and how, for the setup row.
	BrokerInfo string
}

// Report is a finished comparison: its tables, in the order an instructor
// reads them, plus the per-backend runs it came from.
type Report struct {
	Lesson string         `json:"lesson"`
	Speed  float64        `json:"speed"`
	Tables []render.Table `json:"tables"`
	// Main holds the two main runs, in-memory first.
	Main [2]Side `json:"-"`
	// Persistence holds the two interrupted runs, in-memory first.
	Persistence [2]Side `json:"-"`
}

// The workloads of the measured rows, in lesson time.
const (
	sampleEvery   = 250 * time.Millisecond // queue-depth samples
	interruptAt   = 2 * time.Second        // the process dies while retries wait
	scaleTasks    = 40                     // healthy tasks for the throughput row
	persistTasks  = 12                     // tasks in the interrupted runs
	persistFail   = 0.5                    // their transient failure rate
	scaleAttempts = 100 * time.Millisecond // one attempt of a healthy task
)

var backends = [2]lab.Backend{lab.InMem, lab.Rabbit}

// Run compares lesson l on both backends. It fails if the lesson lacks a
// backend, if a run fails, or if a run asked to be interrupted was not.
func Run(ctx context.Context, l lessons.Lesson, cfg Config) (Report, error) {
	for _, b := range backends {
		if l.Runner(b) == nil {
			return Report{}, lessons.ErrNoBackend{Lesson: l, Backend: b}
		}
	}
	if cfg.Speed == 0 {
		cfg.Speed = 20
	}
	rep := Report{Lesson: l.Slug(), Speed: cfg.Speed}
	var depths [2][]lessons.Series
	for i, b := range backends {
		side, res, err := run(ctx, l, cfg, lessons.Options{Backend: b, Plan: cfg.Plan, Sample: sampleEvery})
		if err != nil {
			return rep, fmt.Errorf("%s run: %w", b, err)
		}
		rep.Main[i], depths[i] = side, res.Depths
	}
	for i, b := range backends {
		side, res, err := run(ctx, l, cfg, lessons.Options{Backend: b, Plan: persistPlan(cfg.Plan), Interrupt: interruptAt})
		if err != nil && !errors.Is(err, inmem.ErrCrashed) {
			return rep, fmt.Errorf("%s interrupted run: %w", b, err)
		}
		if !res.Interrupted {
			return rep, fmt.Errorf("lesson %s cannot be interrupted on %s, so persistence cannot be measured", l.ID, b)
		}
		rep.Persistence[i] = side
	}
	scale, err := scalability(ctx, l, cfg)
	if err != nil {
		return rep, err
	}
	rep.Tables = []render.Table{
		Tasks(rep.Main[0], rep.Main[1]),
		DelayTable(timerKeeper, rep.Main[0], rep.Main[1]),
		PersistenceTable(rep.Persistence[0], rep.Persistence[1]),
		scale,
		ObservabilityTable(depths),
		setupTable(cfg, depths[1]),
	}
	return rep, nil
}

// run runs one lesson on one backend at the comparison's speed.
func run(ctx context.Context, l lessons.Lesson, cfg Config, opts lessons.Options) (Side, lessons.Result, error) {
	var rec lab.Recorder
	opts.Speed, opts.Broker = cfg.Speed, cfg.Broker
	res, err := lessons.Run(ctx, l, opts, &rec)
	return Side{Backend: opts.Backend, Speed: cfg.Speed, Events: rec.Events}, res, err
}

// timerKeeper says who holds a retry's delay on each backend.
var timerKeeper = map[lab.Backend]string{
	lab.InMem:  "this process (time.AfterFunc)",
	lab.Rabbit: "the broker (x-message-ttl + dead-letter)",
}

// persistPlan is the interrupted runs' workload: more tasks, half their
// attempts failing, so several are waiting in retries when the process
// dies.
func persistPlan(base *lab.Plan) *lab.Plan {
	p := lab.DefaultPlan()
	if base != nil {
		p = *base
	}
	p.Tasks = numbered("T", persistTasks)
	p.Poison = nil
	p.FailRate = persistFail
	return &p
}

func numbered(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%02d", prefix, i+1)
	}
	return ids
}

// PersistenceTable counts, per backend, what an interruption mid-run cost:
// tasks lost (the stream's lost events) and tasks that still reached a
// final state after it.
func PersistenceTable(a, b Side) render.Table {
	t := render.Table{
		Title:  fmt.Sprintf("Persistence: the process dies at %s of lesson time, while retries wait", render.Stamp(interruptAt.Milliseconds())),
		Header: []string{"backend", "tasks", "lost", "done", "dead", "pending", "what happened"},
	}
	for _, s := range []Side{a, b} {
		f := s.Fates()
		n := 0
		for _, c := range f {
			n += c
		}
		t.Rows = append(t.Rows, []string{string(s.Backend), fmt.Sprint(n), fmt.Sprint(f[lab.FateLost]),
			fmt.Sprint(f[lab.FateDone]), fmt.Sprint(f[lab.FateDead]), fmt.Sprint(f[lab.FatePending]), persistStory(s)})
	}
	return t
}

func persistStory(s Side) string {
	if s.Backend == lab.InMem {
		return "queues and timers lived in memory and died with it"
	}
	redelivered := 0
	for _, e := range s.Events {
		if e.Kind == lab.Redelivered {
			redelivered++
		}
	}
	return fmt.Sprintf("connections cut; consumers reconnected; %d unacked redelivered; waiting messages stayed in the broker", redelivered)
}

// scalability measures healthy-task throughput with 1 and 4 consumers on
// the main queue, per backend.
func scalability(ctx context.Context, l lessons.Lesson, cfg Config) (render.Table, error) {
	t := render.Table{
		Title:  fmt.Sprintf("Scalability: %d healthy tasks of %s each, tasks per second of lesson time", scaleTasks, scaleAttempts),
		Header: []string{"backend", "1 consumer", "4 consumers", "speed-up"},
		Notes:  []string{"Both scale inside one process; only the broker lets consumers in other processes or machines share the queue."},
	}
	plan := lab.Plan{Tasks: numbered("H", scaleTasks), Work: scaleAttempts}
	for _, b := range backends {
		var rate [2]float64
		for i, n := range []int{1, 4} {
			side, _, err := run(ctx, l, cfg, lessons.Options{Backend: b, Plan: &plan, Consumers: n})
			if err != nil {
				return t, fmt.Errorf("%s run with %d consumers: %w", b, n, err)
			}
			if got := MainConsumers(side); got < n {
				t.Rows = append(t.Rows, []string{string(b), "-", "-",
					fmt.Sprintf("not measured: lesson %s does not run %d consumers on its main queue", l.ID, n)})
				break
			}
			rate[i] = Throughput(side)
		}
		if rate[1] > 0 {
			t.Rows = append(t.Rows, []string{string(b), fmt.Sprintf("%.1f/s", rate[0]), fmt.Sprintf("%.1f/s", rate[1]), fmt.Sprintf("%.1f×", rate[1]/rate[0])})
		}
	}
	return t, nil
}

// MainConsumers counts the workers that started attempts on the main queue
// (the queue of the first enqueued task): how many consumers the run
// really had there, whatever it was asked for.
func MainConsumers(s Side) int {
	main := ""
	actors := map[string]bool{}
	for _, e := range s.Events {
		if main == "" && e.Kind == lab.Enqueued {
			main = e.Queue
		}
		if e.Kind == lab.Started && e.Queue == main && main != "" {
			actors[e.Actor] = true
		}
	}
	return len(actors)
}

// Throughput is succeeded tasks per second of lesson time, from the first
// enqueue to the last success.
func Throughput(s Side) float64 {
	first, last, n := int64(-1), int64(0), 0
	for _, e := range s.Events {
		switch e.Kind {
		case lab.Enqueued:
			if first < 0 {
				first = e.TMs
			}
		case lab.Succeeded:
			n++
			last = e.TMs
		}
	}
	if n == 0 || last <= first {
		return 0
	}
	return float64(n) / (float64(last-first) / 1000)
}

// ObservabilityTable shows each watched queue's sampled depth as a
// sparkline, per backend.
func ObservabilityTable(depths [2][]lessons.Series) render.Table {
	t := render.Table{
		Title:  fmt.Sprintf("Observability: queue depth every %s of lesson time", sampleEvery),
		Header: []string{"backend", "queue", "peak", "depth over time"},
		Notes: []string{"In memory a waiting retry sits in a timer, in no queue: nothing shows it.",
			"On the broker it sits in a wait queue: rabbitmqctl list_queues and the management UI show it."},
	}
	for i, series := range depths {
		for _, s := range series {
			peak := 0
			for _, v := range s.Samples {
				peak = max(peak, v)
			}
			t.Rows = append(t.Rows, []string{string(backends[i]), s.Queue, fmt.Sprint(peak), Sparkline(s.Samples)})
		}
	}
	return t
}

// setupTable says what had to exist before each run.
func setupTable(cfg Config, brokerQueues []lessons.Series) render.Table {
	names := make([]string, len(brokerQueues))
	for i, s := range brokerQueues {
		names[i] = s.Queue
	}
	return render.Table{
		Title:  "Setup: what had to exist before the run",
		Header: []string{"backend", "needs"},
		Rows: [][]string{
			{"inmem", "nothing: the Go toolchain (channels, goroutines, time.AfterFunc)"},
			{"rabbit", fmt.Sprintf("%s; %d durable queues declared with their TTL and dead-letter arguments: %s",
				cfg.BrokerInfo, len(names), strings.Join(names, ", "))},
		},
	}
}
