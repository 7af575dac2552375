// Package measure is what the measured lessons (Q03, Q05) share: they run
// their designs a second time, on a bigger workload and on streams of their
// own, and report tables computed from those runs' events. The lesson's
// own stream stays short enough to read; every measured stream still ends
// with one summary per task.
package measure

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
)

// Workload is a stream of tasks for a measured run: the plan (ids, poison,
// work times) and the gap between two arrivals.
type Workload struct {
	Plan  lab.Plan
	Every time.Duration
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

// StreamWorkload builds the measured workload. The poison tasks are picked
// by a shuffle seeded with workloadSeed, so every run, test and backend
// gets the same ones.
func StreamWorkload() Workload {
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
	return Workload{
		Plan:  lab.Plan{Tasks: ids, Poison: poison, Work: workloadWork, Jitter: workloadJitter, Seed: workloadSeed},
		Every: workloadEvery,
	}
}

// String describes the workload for a table's notes.
func (w Workload) String() string {
	return fmt.Sprintf("%d tasks arriving one every %s (%g per second), %d of them poison (seed %d); an attempt takes %s ± %s.",
		len(w.Plan.Tasks), w.Every, float64(time.Second)/float64(w.Every), len(w.Plan.Poison), w.Plan.Seed, w.Plan.Work, w.Plan.Jitter)
}

// IsPoison reports whether task id is one of the workload's poison tasks.
func (w Workload) IsPoison(id string) bool { return slices.Contains(w.Plan.Poison, id) }

// MeasuredRun is one design run on its own stream: the System, the queue
// the workload arrives on, and everything the stream emitted.
type MeasuredRun struct {
	Design string
	rec    lab.Recorder
	Stream *lab.Stream
	Sys    *inmem.System
	Queue  *inmem.Queue
}

// NewRun prepares a run of design on a stream of the lesson env
// runs, with a clock of its own at speed. The design's workers are not
// started yet: the caller starts them on run.sys and run.queue.
func NewRun(ctx context.Context, env *lesson.Env, design string, speed float64, w Workload) *MeasuredRun {
	r := &MeasuredRun{Design: design}
	r.Stream = lab.NewStream(env.Stream.Lesson(), lab.InMem, lab.NewClock(speed), &r.rec)
	r.Sys = inmem.New(ctx, r.Stream, w.Plan)
	r.Queue = r.Sys.Queue("queue", len(w.Plan.Tasks))
	return r
}

// Feed sends the workload through the run's design, waits until every task
// has found its end, and closes the stream with one summary per task.
func (r *MeasuredRun) Feed(ctx context.Context, w Workload) error {
	r.Sys.Produce("Producer", r.Queue, w.Plan.Tasks, w.Every)
	err := r.Sys.Wait(ctx)
	r.Stream.Finish()
	return err
}

// Events returns everything the run's stream emitted, summaries included.
// Call it after feed.
func (r *MeasuredRun) Events() []lab.Event { return r.rec.Events }

// Span is one processing attempt read back from a run's events.
type Span struct {
	Task, Actor string
	Start, End  int64 // lesson ms
}

// AttemptSpans pairs every started event with the succeeded or failed
// event that ends the same attempt. An attempt cut short by a stop has no
// end and is left out.
func AttemptSpans(events []lab.Event) []Span {
	open := map[string]int{} // task -> index in out of its running attempt
	var out []Span
	for _, e := range events {
		switch e.Kind {
		case lab.Started:
			open[e.Task] = len(out)
			out = append(out, Span{Task: e.Task, Actor: e.Actor, Start: e.TMs, End: -1})
		case lab.Succeeded, lab.Failed:
			if i, ok := open[e.Task]; ok {
				out[i].End = e.TMs
				delete(open, e.Task)
			}
		}
	}
	return slices.DeleteFunc(out, func(s Span) bool { return s.End < 0 })
}

// BusyMs sums the lesson time of the attempts keep selects.
func BusyMs(spans []Span, keep func(Span) bool) int64 {
	var total int64
	for _, s := range spans {
		if keep(s) {
			total += s.End - s.Start
		}
	}
	return total
}

// RunMs is how long a run took in lesson time: from its first event to
// its last before the summaries. (A measured stream's clock starts when the
// run is prepared, which may be long before it is fed.)
func RunMs(events []lab.Event) int64 {
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

// Percentile returns the nearest-rank p-th Percentile (0 < p ≤ 100) of
// values, or -1 if there are none.
func Percentile(values []int64, p int) int64 {
	if len(values) == 0 {
		return -1
	}
	sorted := slices.Sorted(slices.Values(values))
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n)
	return sorted[max(rank, 1)-1]
}

// FmtMs formats a lesson duration in ms for a table: "85 ms", "4.27 s".
func FmtMs(ms int64) string {
	if ms < 0 {
		return "-"
	}
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.2f s", float64(ms)/1000)
}

// FatesOf lists, in order of first appearance, the fates the summaries give
// the tasks keep selects.
func FatesOf(events []lab.Event, keep func(id string) bool) []string {
	var fates []string
	for _, e := range events {
		if e.Kind == lab.Summary && keep(e.Task) && !slices.Contains(fates, string(e.Fate)) {
			fates = append(fates, string(e.Fate))
		}
	}
	return fates
}

// FmtCount formats n out of total: "180/180".
func FmtCount(n, total int) string { return fmt.Sprintf("%d/%d", n, total) }

// SpeedNote says how fast a measured run's clock ran, for a table's notes.
func SpeedNote(speed float64) string {
	return fmt.Sprintf(", their clock at %g× whatever --speed says (under go test the figures are exact; live, timer noise makes times read a little high).", speed)
}

// Attempt is one processing attempt read back from a run's events, with
// its attempt number and length in lesson ms.
type Attempt struct {
	Task    string
	Attempt int
	Ms      int64
}

// AttemptLengths pairs every started event with the succeeded or failed
// event of the same task and attempt. An attempt cut short has no end and
// is left out.
func AttemptLengths(events []lab.Event) []Attempt {
	type key struct {
		task    string
		attempt int
	}
	started := map[key]int64{}
	var out []Attempt
	for _, e := range events {
		k := key{e.Task, e.Attempt}
		switch e.Kind {
		case lab.Started:
			started[k] = e.TMs
		case lab.Succeeded, lab.Failed:
			if at, ok := started[k]; ok {
				out = append(out, Attempt{Task: e.Task, Attempt: e.Attempt, Ms: e.TMs - at})
				delete(started, k)
			}
		}
	}
	return out
}
