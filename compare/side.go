package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// Side is one backend's recorded run of a lesson.
type Side struct {
	Backend lab.Backend
	// Label names the side in the tables' headings ("RabbitMQ 4.3.6" when
	// two brokers are compared); "" names it by its backend.
	Label  string
	Speed  float64 // the run's --speed, to turn lesson-time errors into real ms
	Events []lab.Event
	// InterruptedAt is when an interrupted run's interruption came, on its
	// events' clock (lesson.Result.InterruptedAt).
	InterruptedAt time.Duration
}

// Name is what the tables call the side: its Label, else its backend.
func (s Side) Name() string {
	if s.Label != "" {
		return s.Label
	}
	return string(s.Backend)
}

// Ledger replays the side's events into a ledger.
func (s Side) Ledger() *lab.Ledger {
	var l lab.Ledger
	for _, e := range s.Events {
		l.Observe(e)
	}
	return &l
}

// Tasks puts each task's fate, attempts and time from first failure to
// its final state side by side, over every run of each backend: a fate or
// an attempt count that changed between runs reads "done/dead" or "5–6",
// fail→final is the median. Tasks are listed in a's creation order, then
// any only b created. same? compares fates and attempts; for a lesson
// whose outcome depends on timing (timingSensitive, the lesson's
// Parity.TimingSensitive, says why) it compares fates only and says so.
func Tasks(a, b []Side, timingSensitive string) render.Table {
	la, lb := ledgers(a), ledgers(b)
	same := "same?"
	if timingSensitive != "" {
		same = "same fate?"
	}
	t := render.Table{
		Title: "Per task",
		Header: []string{"task",
			a[0].Name() + " fate", "attempts", "fail→final",
			b[0].Name() + " fate", "attempts", "fail→final", same},
	}
	for _, id := range taskIDs(append(append([]*lab.Ledger(nil), la...), lb...)...) {
		ra, rb := taskRunsOf(la, id), taskRunsOf(lb, id)
		agree := ra.fates() == rb.fates() && ra.steady()
		if timingSensitive == "" {
			agree = agree && ra.attempts() == rb.attempts() && !strings.Contains(ra.attempts(), "–")
		}
		t.Rows = append(t.Rows, append(append([]string{id}, ra.cells()...), append(rb.cells(), yesNo(agree))...))
	}
	if len(a) > 1 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d runs per backend: a value that changed reads done/dead or 5–6; fail→final is the median.", len(a)))
	}
	if timingSensitive != "" {
		t.Notes = append(t.Notes, noteLines("Timing-sensitive lesson, so only fates are compared: "+timingSensitive+".")...)
	}
	return t
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

func ledgers(sides []Side) []*lab.Ledger {
	out := make([]*lab.Ledger, len(sides))
	for i, s := range sides {
		out[i] = s.Ledger()
	}
	return out
}

// taskRuns is one task's record in each run of a backend (ok false where
// a run never created it).
type taskRuns []struct {
	rec lab.TaskRecord
	ok  bool
}

func taskRunsOf(ls []*lab.Ledger, id string) taskRuns {
	out := make(taskRuns, len(ls))
	for i, l := range ls {
		out[i].rec, out[i].ok = l.Task(id)
	}
	return out
}

// fates is the task's distinct fates over the runs, "-" for a run without
// it: "done", or "done/dead" when the runs disagree.
func (r taskRuns) fates() string {
	var seen []string
	for _, x := range r {
		f := "-"
		if x.ok {
			f = string(x.rec.Fate)
		}
		if !slices.Contains(seen, f) {
			seen = append(seen, f)
		}
	}
	return strings.Join(seen, "/")
}

// steady reports whether every run gave the task the same fate.
func (r taskRuns) steady() bool { return !strings.Contains(r.fates(), "/") }

// attempts is the range of the task's attempts over the runs that had it.
func (r taskRuns) attempts() string {
	var n []int
	for _, x := range r {
		if x.ok {
			n = append(n, x.rec.Attempts)
		}
	}
	if len(n) == 0 {
		return "-"
	}
	return intRange(n)
}

// span is the median time from first failure to final state, "-" when no
// run had both.
func (r taskRuns) span() string {
	var ms []float64
	for _, x := range r {
		if x.ok && x.rec.FirstFail >= 0 && x.rec.Settled >= 0 {
			ms = append(ms, float64(x.rec.Settled-x.rec.FirstFail))
		}
	}
	if len(ms) == 0 {
		return "-"
	}
	return render.Stamp(int64(spreadOf(ms).Median))
}

func (r taskRuns) cells() []string {
	if r.fates() == "-" {
		return []string{"-", "-", "-"}
	}
	return []string{r.fates(), r.attempts(), r.span()}
}

func taskIDs(ls ...*lab.Ledger) []string {
	seen := map[string]bool{}
	var ids []string
	for _, l := range ls {
		for _, r := range l.Tasks() {
			if !seen[r.ID] {
				seen[r.ID] = true
				ids = append(ids, r.ID)
			}
		}
	}
	return ids
}

// Delay is one observed retry delay: a scheduled hop and the attempt that
// followed it.
type Delay struct {
	Task       string
	Configured time.Duration // lesson time the lesson asked for
	Observed   time.Duration // lesson time until the task's next attempt started
}

// Delays pairs every scheduled event with the same task's next started
// event. A scheduled hop with no later attempt (the run ended, the task was
// lost) is not a delay that fired and is left out.
func (s Side) Delays() []Delay {
	var out []Delay
	for i, e := range s.Events {
		if e.Kind != lab.Scheduled {
			continue
		}
		for _, n := range s.Events[i+1:] {
			if n.Task == e.Task && n.Kind == lab.Started {
				out = append(out, Delay{
					Task:       e.Task,
					Configured: time.Duration(e.DelayMs) * time.Millisecond,
					Observed:   time.Duration(n.TMs-e.TMs) * time.Millisecond,
				})
				break
			}
		}
	}
	return out
}

// DelayTable reports, per backend and configured delay, how late the
// retries really started: mean and max error in real milliseconds (lesson
// error divided by speed), as the median [min–max] over each backend's
// runs, and who keeps the timer. runs holds one backend's runs per entry.
func DelayTable(timer map[lab.Backend]string, runs ...[]Side) render.Table {
	t := render.Table{
		Title:  "Retry delay: configured vs observed",
		Header: []string{"backend", "configured", "retries/run", "mean late (real ms)", "max late (real ms)"},
	}
	unsteadyRows := false
	for _, sides := range runs {
		per := lateness(sides)
		for _, k := range sortedKeys(per) {
			m := per[k]
			mean, worst := spreadOf(m.means), spreadOf(m.maxes)
			backend := sides[0].Name()
			if mean.Unsteady(lateFloor) || worst.Unsteady(lateFloor) {
				backend += unsteadyMark
				unsteadyRows = true
			}
			t.Rows = append(t.Rows, []string{backend, k.String(), intRange(m.counts), mean.Format("%.1f", ""), worst.Format("%.1f", "")})
		}
		if keeper := timer[sides[0].Backend]; keeper != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("%s: %s keeps the timer.", sides[0].Backend, keeper))
		}
	}
	t.Notes = append(t.Notes, noteLines("Late: the next attempt began this long after the configured wait. It counts any wait for a busy worker "+
		"as well as the timer (Q12's hung calls hold its one worker for seconds): a late row with a busy worker measures the worker.")...)
	if len(runs) > 0 && len(runs[0]) > 1 {
		t.Notes = append(t.Notes, fmt.Sprintf("Late: median [min–max] over %d runs per backend.", len(runs[0])))
	}
	if unsteadyRows {
		t.Notes = append(t.Notes, unsteadyNote)
	}
	return t
}

// lateFloor is the spread of lateness, in real ms, that is scheduling
// noise on a shared machine rather than a property of the backend.
const lateFloor = 2.0

// lateByRun is one configured delay's measurements, one entry per run
// that had such a retry.
type lateByRun struct {
	counts       []int
	means, maxes []float64
}

// lateness groups every run's retry lateness (real ms) by configured delay.
func lateness(sides []Side) map[time.Duration]*lateByRun {
	per := map[time.Duration]*lateByRun{}
	for _, s := range sides {
		byDelay := map[time.Duration][]float64{}
		for _, d := range s.Delays() {
			late := float64(d.Observed-d.Configured) / float64(time.Millisecond) / s.Speed
			byDelay[d.Configured] = append(byDelay[d.Configured], late)
		}
		for k, xs := range byDelay {
			if per[k] == nil {
				per[k] = &lateByRun{}
			}
			mean, worst := meanMax(xs)
			per[k].counts = append(per[k].counts, len(xs))
			per[k].means = append(per[k].means, mean)
			per[k].maxes = append(per[k].maxes, worst)
		}
	}
	return per
}

func sortedKeys[V any](m map[time.Duration]V) []time.Duration {
	keys := make([]time.Duration, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// FatesAtInterruption counts the fates of the tasks first enqueued before
// the interruption (InterruptedAt): the ones it found in the system. A
// task published after it never met the interruption (and a crashed
// in-memory process published none). The time is the run's own: a broker
// run's connection and declares take real time before the lesson arms the
// interruption, so a fixed lesson time would count too few (none at 400x
// on a busy machine).
func (s Side) FatesAtInterruption() map[lab.Fate]int {
	at := s.InterruptedAt.Milliseconds()
	existed := map[string]bool{}
	for _, e := range s.Events {
		if e.Kind == lab.Enqueued && e.TMs < at {
			existed[e.Task] = true
		}
	}
	n := map[lab.Fate]int{}
	for _, r := range s.Ledger().Tasks() {
		if existed[r.ID] {
			n[r.Fate]++
		}
	}
	return n
}

// Fates counts the side's tasks by fate.
func (s Side) Fates() map[lab.Fate]int {
	n := map[lab.Fate]int{}
	for _, r := range s.Ledger().Tasks() {
		n[r.Fate]++
	}
	return n
}

// Sparkline draws samples as a row of block characters scaled to the
// largest sample; an all-zero series is a flat line.
func Sparkline(samples []int) string {
	const bars = "▁▂▃▄▅▆▇█"
	peak := 0
	for _, v := range samples {
		peak = max(peak, v)
	}
	runes := []rune(bars)
	var b strings.Builder
	for _, v := range samples {
		i := 0
		if peak > 0 {
			i = v * (len(runes) - 1) / peak
		}
		b.WriteRune(runes[i])
	}
	return b.String()
}

func meanMax(xs []float64) (mean, max float64) {
	max = math.Inf(-1)
	for _, x := range xs {
		mean += x
		max = math.Max(max, x)
	}
	return mean / float64(len(xs)), max
}
