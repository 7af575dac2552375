package compare

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// Side is one backend's recorded run of a lesson.
type Side struct {
	Backend lab.Backend
	Speed   float64 // the run's --speed, to turn lesson-time errors into real ms
	Events  []lab.Event
}

// Ledger replays the side's events into a ledger.
func (s Side) Ledger() *lab.Ledger {
	var l lab.Ledger
	for _, e := range s.Events {
		l.Observe(e)
	}
	return &l
}

// Tasks puts each task's fate, attempts and time from first failure to its
// final state side by side. Tasks are listed in a's creation order, then any
// only b created.
func Tasks(a, b Side) render.Table {
	la, lb := a.Ledger(), b.Ledger()
	t := render.Table{
		Title: "Per task",
		Header: []string{"task",
			string(a.Backend) + " fate", "attempts", "fail→final",
			string(b.Backend) + " fate", "attempts", "fail→final", "same?"},
	}
	for _, id := range taskIDs(la, lb) {
		ra, okA := la.Task(id)
		rb, okB := lb.Task(id)
		same := "yes"
		if !okA || !okB || ra.Fate != rb.Fate || ra.Attempts != rb.Attempts {
			same = "NO"
		}
		t.Rows = append(t.Rows, append(append([]string{id}, cells(ra, okA)...), append(cells(rb, okB), same)...))
	}
	return t
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

func cells(r lab.TaskRecord, ok bool) []string {
	if !ok {
		return []string{"-", "-", "-"}
	}
	span := "-"
	if r.FirstFail >= 0 && r.Settled >= 0 {
		span = render.Stamp(r.Settled - r.FirstFail)
	}
	return []string{string(r.Fate), fmt.Sprint(r.Attempts), span}
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
// error divided by speed), and who keeps the timer.
func DelayTable(timer map[lab.Backend]string, sides ...Side) render.Table {
	t := render.Table{
		Title:  "Retry delay: configured vs observed",
		Header: []string{"backend", "configured", "retries", "mean late (real ms)", "max late (real ms)", "who keeps the timer"},
	}
	for _, s := range sides {
		byDelay := map[time.Duration][]float64{}
		for _, d := range s.Delays() {
			late := float64(d.Observed-d.Configured) / float64(time.Millisecond) / s.Speed
			byDelay[d.Configured] = append(byDelay[d.Configured], late)
		}
		keys := make([]time.Duration, 0, len(byDelay))
		for k := range byDelay {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		for _, k := range keys {
			mean, max := meanMax(byDelay[k])
			t.Rows = append(t.Rows, []string{string(s.Backend), k.String(), fmt.Sprint(len(byDelay[k])),
				fmt.Sprintf("%.1f", mean), fmt.Sprintf("%.1f", max), timer[s.Backend]})
		}
	}
	return t
}

func meanMax(xs []float64) (mean, max float64) {
	max = math.Inf(-1)
	for _, x := range xs {
		mean += x
		max = math.Max(max, x)
	}
	return mean / float64(len(xs)), max
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
