package compare

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/run"
)

// Config chooses how a comparison runs.
type Config struct {
	// Speed is lesson time per real time; 0 means the lesson's own
	// (Lesson.CompareSpeed), else DefaultSpeed.
	Speed  float64
	Plan   *lab.Plan // the main runs' workload; default lab.DefaultPlan()
	Broker string    // AMQP URL of the broker
	// BrokerInfo says which broker was found and how, for the setup row.
	BrokerInfo string
	// Repeat is how many times each measured row runs per backend
	// (default DefaultRepeat); the tables show the median and the range.
	Repeat int
}

// Report is a finished comparison: its tables, in the order an instructor
// reads them, plus the per-backend runs they came from.
type Report struct {
	Lesson string         `json:"lesson"`
	Speed  float64        `json:"speed"`
	Repeat int            `json:"repeat"`
	Tables []render.Table `json:"tables"`
	// Main holds each backend's main runs, in-memory first.
	Main [2][]Side `json:"-"`
	// Persistence holds each backend's interrupted runs, in-memory first.
	Persistence [2][]Side `json:"-"`
}

// The workloads of the measured rows, in lesson time.
const (
	sampleEvery   = 250 * time.Millisecond // queue-depth samples
	interruptAt   = 2 * time.Second        // the interruption, while retries wait (see Lesson.CompareInterrupt)
	scaleTasks    = 40                     // healthy tasks for the throughput row
	persistTasks  = 12                     // tasks in the interrupted runs
	persistFail   = 0.5                    // their transient failure rate
	scaleAttempts = 100 * time.Millisecond // one attempt of a healthy task
)

var backends = [2]lab.Backend{lab.InMem, lab.Rabbit}

// DefaultSpeed is the speed of a comparison for a lesson without a
// CompareSpeed of its own.
const DefaultSpeed = 20

// SpeedOf is the speed lesson l compares at when none is given: its
// CompareSpeed, else DefaultSpeed.
func SpeedOf(l lesson.Lesson) float64 {
	if l.CompareSpeed > 0 {
		return l.CompareSpeed
	}
	return DefaultSpeed
}

// stretch scales one of compare's lesson-time workloads to lesson l: a
// lesson that compares faster than DefaultSpeed (Q14, whose waits are the
// seed's minutes) has times as much longer, so its interruption falls at
// the same point of its story and its depths are sampled as often in real
// time as another lesson's at 20×.
func stretch(l lesson.Lesson, d time.Duration) time.Duration {
	return time.Duration(float64(d) * SpeedOf(l) / DefaultSpeed)
}

// interruptionOf is when the persistence runs of lesson l are interrupted:
// its own time (Lesson.CompareInterrupt), else interruptAt stretched to
// its lesson time.
func interruptionOf(l lesson.Lesson) time.Duration {
	if l.CompareInterrupt > 0 {
		return l.CompareInterrupt
	}
	return stretch(l, interruptAt)
}

// Run compares lesson l on both backends, running each measured row
// cfg.Repeat times per backend (alternating backends, so a busy moment of
// the machine falls on both). It fails if the lesson lacks a backend, if a
// run fails, or if a run asked to be interrupted was not.
func Run(ctx context.Context, l lesson.Lesson, cfg Config) (Report, error) {
	for _, b := range backends {
		if l.Runner(b) == nil {
			return Report{}, lesson.ErrNoBackend{Lesson: l, Backend: b}
		}
	}
	if cfg.Speed == 0 {
		cfg.Speed = SpeedOf(l)
	}
	if cfg.Repeat <= 0 {
		cfg.Repeat = DefaultRepeat
	}
	rep := Report{Lesson: l.Slug(), Speed: cfg.Speed, Repeat: cfg.Repeat}
	var depths [2][]lesson.Series
	for r := range cfg.Repeat {
		for i, b := range backends {
			side, res, err := runSide(ctx, l, cfg, lesson.Options{Backend: b, Plan: cfg.Plan, Sample: stretch(l, sampleEvery)})
			if err != nil {
				return rep, fmt.Errorf("%s run: %w", b, err)
			}
			rep.Main[i] = append(rep.Main[i], side)
			if r == 0 {
				depths[i] = res.Depths
			}
		}
	}
	for range cfg.Repeat {
		for i, b := range backends {
			side, err := interrupted(ctx, l, cfg, b)
			if err != nil {
				return rep, err
			}
			rep.Persistence[i] = append(rep.Persistence[i], side)
		}
	}
	scale, err := scalability(ctx, l, cfg)
	if err != nil {
		return rep, err
	}
	first := [2]Side{rep.Main[0][0], rep.Main[1][0]}
	rep.Tables = []render.Table{
		Tasks(rep.Main[0], rep.Main[1], l.Parity.TimingSensitive),
		DelayTable(timerKeeper, rep.Main[0], rep.Main[1]),
		PersistenceTable(rep.Persistence[0], rep.Persistence[1], interruptionOf(l)),
		scale,
		ObservabilityTable(first, depths, stretch(l, sampleEvery)),
		setupTable(cfg, first[1], depths[1]),
	}
	return rep, nil
}

// runSide runs one lesson on one backend at the comparison's speed through
// the run API, as qlab run does: a broker run under names of its own, and
// a run that lost tasks the lesson does not lose on purpose fails (a crash
// compare asked for in memory loses them by design: lesson.CheckLost).
func runSide(ctx context.Context, l lesson.Lesson, cfg Config, opts lesson.Options, sinks ...lab.Sink) (Side, lesson.Result, error) {
	var rec lab.Recorder
	opts.Speed, opts.Broker = cfg.Speed, cfg.Broker
	side := Side{Backend: opts.Backend, Speed: cfg.Speed}
	ready, err := run.Prepare(ctx, run.Request{Lesson: l, Options: opts})
	if err != nil {
		return side, lesson.Result{}, err
	}
	res, err := ready.Start(ctx, append([]lab.Sink{&rec}, sinks...)...)
	side.Events = rec.Events
	return side, res, err
}

// interrupted runs the persistence scenario on b: interrupted at
// interruptionOf(l) of lesson time, and stopped at the end of the part of the
// lesson the interruption fell in. In memory the crash ends the run there
// anyway; stopping the broker run there too makes a lesson in parts (Q12,
// Q13) count the same tasks on both sides.
func interrupted(ctx context.Context, l lesson.Lesson, cfg Config, b lab.Backend) (Side, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	at := interruptionOf(l)
	cut := &phaseCut{after: at.Milliseconds(), stop: cancel}
	side, res, err := runSide(ctx, l, cfg, lesson.Options{Backend: b, Plan: persistPlan(cfg.Plan), Interrupt: at}, cut)
	side.InterruptedAt = res.InterruptedAt
	switch {
	case errors.Is(err, inmem.ErrCrashed):
	case cut.stopped:
		// The part measured ended; what the stop did to the next one
		// (it never opened its backend) is no part of the row.
	case err != nil:
		return side, fmt.Errorf("%s interrupted run: %w", b, err)
	}
	if !res.Interrupted {
		return side, fmt.Errorf("lesson %s cannot be interrupted on %s (or its first part ended before %s), so persistence cannot be measured",
			l.ID, b, render.Stamp(at.Milliseconds()))
	}
	return side, nil
}

// phaseCut is a sink that stops a run when a new part of the lesson
// (a phase event) begins after lesson time `after`: the interruption,
// armed when the first part's workers started, has happened by then in
// every lesson whose first part lasts that long.
type phaseCut struct {
	after   int64
	stop    func()
	phases  int
	stopped bool
}

// Emit counts phases; the stream calls it from one goroutine at a time.
func (c *phaseCut) Emit(e lab.Event) {
	if e.Kind != lab.Phase {
		return
	}
	c.phases++
	if c.phases > 1 && e.TMs >= c.after && !c.stopped {
		c.stopped = true
		c.stop()
	}
}

// timerKeeper says who holds a retry's delay on each backend.
var timerKeeper = map[lab.Backend]string{
	lab.InMem:  "this process (time.AfterFunc)",
	lab.Rabbit: "the broker (x-message-ttl + dead-letter)",
}

// persistPlan is the interrupted runs' workload: more tasks, half their
// attempts failing, so several are waiting in retries when the
// interruption comes. Lessons with a workload of their own (Q12) ignore it.
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

// interruption says what the interruption was on each backend: only the
// in-memory process can die in compare; on the broker the consumers'
// connections are cut while the process and the broker live on.
var interruption = map[lab.Backend]string{
	lab.InMem:  "process crashed",
	lab.Rabbit: "consumer connections cut",
}

// PersistenceTable counts, per backend, what an interruption mid-run cost
// over its runs (median [min–max]): of the tasks that existed when it
// came, those lost (the stream's lost events) and those that still reached
// a final state after it.
func PersistenceTable(a, b []Side, at time.Duration) render.Table {
	t := render.Table{
		Title:  fmt.Sprintf("Persistence: an interruption at %s of lesson time, while retries wait", render.Stamp(at.Milliseconds())),
		Header: []string{"backend", "interruption", "tasks", "lost", "done", "dead", "pending"},
	}
	for _, sides := range [][]Side{a, b} {
		row := []string{string(sides[0].Backend), interruption[sides[0].Backend]}
		for _, fate := range []lab.Fate{"", lab.FateLost, lab.FateDone, lab.FateDead, lab.FatePending} {
			row = append(row, fateCount(sides, fate))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = append(t.Notes,
		noteLines(fmt.Sprintf("tasks: those enqueued before the interruption, %s after the workers started; one published after it never met it "+
			"(and the crashed process published none).", render.Stamp(at.Milliseconds())))...)
	t.Notes = append(t.Notes,
		"inmem: the queues and the timers lived in the process's memory and died with it.",
		"rabbit: the process and the broker lived on, and the consumers reconnected; unacked messages redelivered: "+redeliveries(b)+";",
		"  messages waiting in the broker's queues never left it.")
	if part := interruptedPart(a, b); part != "" {
		t.Notes = append(t.Notes, noteLines("Each run stops after the part it was interrupted in ("+part+"), so both sides count tasks of the same part.")...)
	}
	if len(a) > 1 {
		t.Notes = append(t.Notes, fmt.Sprintf("Counts: median [min–max] over %d runs per backend.", len(a)))
	}
	t.Notes = append(t.Notes,
		"A broker restart (stop and start the node) is not measured by compare: it needs a private",
		"  node. See the fault suite in CONTRIBUTING.md, under Reliability.")
	return t
}

// fateCount is how many tasks of each run, of those enqueued before its
// interruption, ended with fate ("" = all of them), as a median
// [min–max].
func fateCount(sides []Side, fate lab.Fate) string {
	var n []float64
	for _, s := range sides {
		c := 0
		for f, k := range s.FatesAtInterruption() {
			if fate == "" || f == fate {
				c += k
			}
		}
		n = append(n, float64(c))
	}
	return spreadOf(n).Format("%.0f", "")
}

// redeliveries is the range of redelivered events over the runs: "1" or
// "0–2".
func redeliveries(sides []Side) string {
	var n []int
	for _, s := range sides {
		c := 0
		for _, e := range s.Events {
			if e.Kind == lab.Redelivered {
				c++
			}
		}
		n = append(n, c)
	}
	return intRange(n)
}

// interruptedPart names the lesson part the interrupted runs ended in
// (the part of their last enqueued task), "" for a lesson in one part.
func interruptedPart(sides ...[]Side) string {
	part := ""
	for _, runs := range sides {
		for _, s := range runs {
			current := ""
			for _, e := range s.Events {
				switch e.Kind {
				case lab.Phase:
					current = e.Note
				case lab.Enqueued:
					part = current
				}
			}
		}
	}
	return part
}

// scalability measures healthy-task throughput with 1 and 4 consumers on
// the main queue, per backend, cfg.Repeat times each. A lesson that does
// not run 4 consumers there is found by the first 4-consumer run and not
// measured further.
func scalability(ctx context.Context, l lesson.Lesson, cfg Config) (render.Table, error) {
	t := render.Table{
		Title:  fmt.Sprintf("Scalability: %d healthy tasks of %s each, tasks per second of lesson time", scaleTasks, scaleAttempts),
		Header: []string{"backend", "1 consumer", "4 consumers", "speed-up"},
	}
	plan := lab.Plan{Tasks: numbered("H", scaleTasks), Work: scaleAttempts}
	unsteadyRows := false
	for _, b := range backends {
		var one, four, up []float64
		for range cfg.Repeat {
			r1, r4, why, err := throughputs(ctx, l, cfg, b, &plan)
			if err != nil {
				return t, err
			}
			if why != "" {
				t.Rows = append(t.Rows, []string{string(b), "-", "-", "not measured: " + why})
				break
			}
			four, one, up = append(four, r4), append(one, r1), append(up, r4/r1)
		}
		if len(up) == 0 {
			continue
		}
		s1, s4, su := spreadOf(one), spreadOf(four), spreadOf(up)
		backend := string(b)
		if s1.Unsteady(0) || s4.Unsteady(0) || su.Unsteady(0) {
			backend += unsteadyMark
			unsteadyRows = true
		}
		t.Rows = append(t.Rows, []string{backend, s1.Format("%.1f", "/s"), s4.Format("%.1f", "/s"), su.Format("%.1f", "×")})
	}
	if cfg.Repeat > 1 {
		t.Notes = append(t.Notes, fmt.Sprintf("Median [min–max] over %d runs per backend and consumer count.", cfg.Repeat))
	}
	if unsteadyRows {
		t.Notes = append(t.Notes, unsteadyNote)
	}
	t.Notes = append(t.Notes, "Both scale inside one process; only the broker lets consumers in other processes or",
		"  machines share the queue.")
	return t, nil
}

// throughputs runs plan on b with 4 consumers and then with 1, and
// returns each run's throughput, or why it was not measured. A lesson
// that turns out to run fewer consumers is stopped as soon as that shows.
func throughputs(ctx context.Context, l lesson.Lesson, cfg Config, b lab.Backend, plan *lab.Plan) (one, four float64, why string, err error) {
	var rate [2]float64
	for i, n := range []int{4, 1} {
		runCtx, cancel := context.WithCancel(ctx)
		few := &fewConsumers{want: n, stop: cancel}
		side, _, err := runSide(runCtx, l, cfg, lesson.Options{Backend: b, Plan: plan, Consumers: n}, few)
		cancel()
		if got := MainConsumers(side); few.stopped || got < n {
			return 0, 0, fmt.Sprintf("lesson %s runs %d consumer(s) on its main queue", l.ID, got), nil
		}
		if err != nil {
			return 0, 0, "", fmt.Errorf("%s run with %d consumers: %w", b, n, err)
		}
		if rate[i] = Throughput(side); rate[i] == 0 {
			return 0, 0, fmt.Sprintf("no task succeeded with %d consumer(s)", n), nil
		}
	}
	return rate[1], rate[0], "", nil
}

// fewConsumers is a sink that stops a run once 4×want attempts on the
// main queue (the queue of the first enqueued task) came from fewer than
// want workers: the lesson does not run want consumers there, and the
// rest of the run would measure nothing.
type fewConsumers struct {
	want    int
	stop    func()
	main    string
	starts  int
	actors  map[string]bool
	stopped bool
}

// Emit watches attempts; the stream calls it from one goroutine at a time.
func (f *fewConsumers) Emit(e lab.Event) {
	switch {
	case f.main == "" && e.Kind == lab.Enqueued:
		f.main, f.actors = e.Queue, map[string]bool{}
	case e.Kind == lab.Started && e.Queue == f.main && f.main != "" && !f.stopped:
		f.starts++
		f.actors[e.Actor] = true
		// 4× the consumers' count of starts: on a loaded machine one
		// goroutine of four can miss the first eight (a CI run at load 69).
		if f.starts >= 4*f.want && len(f.actors) < f.want {
			f.stopped = true
			f.stop()
		}
	}
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
