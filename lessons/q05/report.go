package q05

import (
	"fmt"
	"strings"

	"github.com/queuelab/qlab/lessons/measure"
	"github.com/queuelab/qlab/render"
)

// q05Idle is how many of d's goroutines were idle on average: all of them
// minus the average number running an attempt over the run.
func q05Idle(d q05Design) float64 {
	events := d.run.Events()
	run := measure.RunMs(events)
	if run == 0 {
		return float64(d.goroutines)
	}
	busy := measure.BusyMs(measure.AttemptSpans(events), func(measure.Span) bool { return true })
	return float64(d.goroutines) - float64(busy)/float64(run)
}

func q05Table(designs []q05Design, w measure.Workload) render.Table {
	t := render.Table{
		Title:  "More retries: what each design costs (measured)",
		Header: []string{"design", "retries", "queues", "goroutines", "idle goroutines (avg)", "poison ends"},
	}
	for _, d := range designs {
		t.Rows = append(t.Rows, []string{
			d.run.Design, fmt.Sprint(d.retries), fmt.Sprint(d.queues), fmt.Sprint(d.goroutines),
			fmt.Sprintf("%.1f", q05Idle(d)), strings.Join(measure.FatesOf(d.run.Events(), w.IsPoison), ", "),
		})
	}
	t.Notes = []string{
		"Workload: the stream of lesson 3: " + w.String(),
		"goroutines: worker goroutines the design started (inmem.System.Workers; its test checks it against runtime.NumGoroutine). A retry that waits is a timer, not a goroutine.",
		"idle goroutines: goroutines minus the average number running an attempt, over the whole run (from its events).",
		"Delayed retry: waits 1, 2, 4, 8, 16 s, then 16 s for each further retry; after the last retry the task is parked in deadLetterQueue.",
		"Measured on separate runs" + measure.SpeedNote(designs[0].run.Stream.Clock().Speed()),
	}
	return t
}
