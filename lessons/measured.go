package lessons

// The measured lessons (Q03, Q05) run their designs a second time, on a
// bigger workload and on streams of their own, and report tables computed
// from those runs' events. The lesson's own stream stays short enough to
// read; every measured stream still ends with one summary per task.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
)

// workload is a stream of tasks for a measured run: the plan (ids, poison,
// work times) and the gap between two arrivals.
type workload struct {
	plan  lab.Plan
	every time.Duration
}

// The measured workload: 200 tasks arriving at a steady 8 per second, 10 %
// of them poison. An attempt takes 50–150 ms, 100 ms on average, so a
// worker that only did first attempts would be busy 80 % of the time.
const (
	workloadTasks  = 200
	workloadPoison = 10 // percent
	workloadSeed   = 3
	workloadEvery  = 125 * time.Millisecond
	workloadWork   = 100 * time.Millisecond
	workloadJitter = 50 * time.Millisecond
)

// streamWorkload builds the measured workload. The poison tasks are picked
// by a shuffle seeded with workloadSeed, so every run, test and backend
// gets the same ones.
func streamWorkload() workload {
	ids := make([]string, workloadTasks)
	for i := range ids {
		ids[i] = fmt.Sprintf("T%03d", i+1)
	}
	shuffle := rand.New(rand.NewPCG(workloadSeed, workloadSeed)).Perm(workloadTasks)
	picked := shuffle[:workloadTasks*workloadPoison/100]
	slices.Sort(picked)
	var poison []string
	for _, i := range picked {
		poison = append(poison, ids[i])
	}
	return workload{
		plan:  lab.Plan{Tasks: ids, Poison: poison, Work: workloadWork, Jitter: workloadJitter, Seed: workloadSeed},
		every: workloadEvery,
	}
}

// String describes the workload for a table's notes.
func (w workload) String() string {
	return fmt.Sprintf("%d tasks arriving one every %s (%g per second), %d of them poison (seed %d); an attempt takes %s ± %s.",
		len(w.plan.Tasks), w.every, float64(time.Second)/float64(w.every), len(w.plan.Poison), w.plan.Seed, w.plan.Work, w.plan.Jitter)
}

// isPoison reports whether task id is one of the workload's poison tasks.
func (w workload) isPoison(id string) bool { return slices.Contains(w.plan.Poison, id) }

// measuredRun is one design run on its own stream: the System, the queue
// the workload arrives on, and everything the stream emitted.
type measuredRun struct {
	design string
	rec    lab.Recorder
	stream *lab.Stream
	sys    *inmem.System
	queue  *inmem.Queue
}

// newMeasuredRun prepares a run of design on a stream of the lesson env
// runs, with a clock of its own at speed. The design's workers are not
// started yet: the caller starts them on run.sys and run.queue.
func newMeasuredRun(ctx context.Context, env *Env, design string, speed float64, w workload) *measuredRun {
	r := &measuredRun{design: design}
	r.stream = lab.NewStream(env.Stream.Lesson(), lab.InMem, lab.NewClock(speed), &r.rec)
	r.sys = inmem.New(ctx, r.stream, w.plan)
	r.queue = r.sys.Queue("queue", len(w.plan.Tasks))
	return r
}

// feed sends the workload through the run's design, waits until every task
// has found its end, and closes the stream with one summary per task.
func (r *measuredRun) feed(ctx context.Context, w workload) error {
	r.sys.Produce("Producer", r.queue, w.plan.Tasks, w.every)
	err := r.sys.Wait(ctx)
	r.stream.Finish()
	return err
}

// events returns everything the run's stream emitted, summaries included.
// Call it after feed.
func (r *measuredRun) events() []lab.Event { return r.rec.Events }

// span is one processing attempt read back from a run's events.
type span struct {
	task, actor string
	start, end  int64 // lesson ms
}

// attemptSpans pairs every started event with the succeeded or failed
// event that ends the same attempt. An attempt cut short by a stop has no
// end and is left out.
func attemptSpans(events []lab.Event) []span {
	open := map[string]int{} // task -> index in out of its running attempt
	var out []span
	for _, e := range events {
		switch e.Kind {
		case lab.Started:
			open[e.Task] = len(out)
			out = append(out, span{task: e.Task, actor: e.Actor, start: e.TMs, end: -1})
		case lab.Succeeded, lab.Failed:
			if i, ok := open[e.Task]; ok {
				out[i].end = e.TMs
				delete(open, e.Task)
			}
		}
	}
	return slices.DeleteFunc(out, func(s span) bool { return s.end < 0 })
}

// busyMs sums the lesson time of the attempts keep selects.
func busyMs(spans []span, keep func(span) bool) int64 {
	var total int64
	for _, s := range spans {
		if keep(s) {
			total += s.end - s.start
		}
	}
	return total
}

// runMs is how long a run took in lesson time: from its first event to
// its last before the summaries. (A measured stream's clock starts when the
// run is prepared, which may be long before it is fed.)
func runMs(events []lab.Event) int64 {
	first, last := int64(-1), int64(0)
	for _, e := range events {
		if e.Kind == lab.Summary {
			continue
		}
		if first < 0 {
			first = e.TMs
		}
		last = e.TMs
	}
	return max(last-first, 0)
}

// percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of
// values, or -1 if there are none.
func percentile(values []int64, p int) int64 {
	if len(values) == 0 {
		return -1
	}
	sorted := slices.Sorted(slices.Values(values))
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n)
	return sorted[max(rank, 1)-1]
}

// fmtMs formats a lesson duration in ms for a table: "85 ms", "4.27 s".
func fmtMs(ms int64) string {
	if ms < 0 {
		return "-"
	}
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.2f s", float64(ms)/1000)
}

// fatesOf lists, in order of first appearance, the fates the summaries give
// the tasks keep selects.
func fatesOf(events []lab.Event, keep func(id string) bool) []string {
	var fates []string
	for _, e := range events {
		if e.Kind == lab.Summary && keep(e.Task) && !slices.Contains(fates, string(e.Fate)) {
			fates = append(fates, string(e.Fate))
		}
	}
	return fates
}

// fmtCount formats n out of total: "180/180".
func fmtCount(n, total int) string { return fmt.Sprintf("%d/%d", n, total) }

// speedNote says how fast a measured run's clock ran, for a table's notes.
func speedNote(speed float64) string {
	return fmt.Sprintf(", their clock at %g× whatever --speed says (under go test the figures are exact; live, timer noise makes times read a little high).", speed)
}
