package compare

import (
	"fmt"
	"strings"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/render"
)

// sparkWidth bounds a sparkline, so the table fits a 100-column slide.
const sparkWidth = 40

// Part is one part of a lesson that runs in several (a phase event).
type Part struct {
	Title string
	At    int64 // lesson ms at which it began
}

// Phases lists the parts of the side's run, in order; none for a lesson
// in one part.
func Phases(s Side) []Part {
	var p []Part
	for _, e := range s.Events {
		if e.Kind == lab.Phase {
			p = append(p, Part{Title: e.Note, At: e.TMs})
		}
	}
	return p
}

// partSeries is one watched queue of one part of a run.
type partSeries struct {
	queue   string
	part    int // 1-based; 0 when the lesson has one part
	samples []int
}

// byPart assigns each series to the part that declared it (a lesson in
// parts declares its queues again for each: the k-th series of a name
// belongs to part k) and trims it to that part's samples.
func byPart(s Side, series []lesson.Series) []partSeries {
	parts := len(Phases(s))
	seen := map[string]int{}
	out := make([]partSeries, 0, len(series))
	for _, sr := range series {
		seen[sr.Queue]++
		ps := partSeries{queue: sr.Queue, samples: sr.Samples}
		if parts > 1 && seen[sr.Queue] <= parts {
			ps.part = seen[sr.Queue]
		}
		out = append(out, ps)
	}
	// Every tick samples every series registered so far, so part k's
	// series has, beyond its own part, exactly the samples of the next
	// part's series of the same queue: cut those off.
	for i := range out {
		for _, later := range out[i+1:] {
			if later.queue == out[i].queue && out[i].part > 0 && later.part == out[i].part+1 {
				out[i].samples = out[i].samples[:max(len(out[i].samples)-len(later.samples), 1)]
				break
			}
		}
	}
	return out
}

// ObservabilityTable shows each watched queue's sampled depth as a
// sparkline, per backend and, for a lesson in parts, per part. depths[i]
// was sampled during sides[i], every `every` of lesson time. A sparkline
// longer than sparkWidth shows the peak of each group of samples.
func ObservabilityTable(sides [2]Side, depths [2][]lesson.Series, every time.Duration) render.Table {
	var rows [2][]partSeries
	longest, parted := 0, false
	for i := range sides {
		rows[i] = byPart(sides[i], depths[i])
		for _, r := range rows[i] {
			longest = max(longest, len(r.samples))
			parted = parted || r.part > 0
		}
	}
	group := max((longest+sparkWidth-1)/sparkWidth, 1)
	t := render.Table{
		Title:  fmt.Sprintf("Observability: queue depth, one mark per %s of lesson time", time.Duration(group)*every),
		Header: []string{"backend", "queue", "peak", "depth over time"},
	}
	if parted {
		t.Header = []string{"backend", "part", "queue", "peak", "depth over time"}
	}
	for i, rs := range rows {
		for _, r := range rs {
			row := []string{string(backends[i]), r.queue, fmt.Sprint(peak(r.samples)), Sparkline(peaks(r.samples, group))}
			if parted {
				row = append([]string{row[0], fmt.Sprint(r.part)}, row[1:]...)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	if group > 1 {
		t.Notes = append(t.Notes, fmt.Sprintf("Sampled every %s; each mark is the peak of %d samples.", every, group))
	}
	if len(depths[1]) > 0 {
		t.Notes = append(t.Notes, "A busy machine skips samples (a broker probe is a round trip), so lines may differ in length.")
	}
	if parted {
		for i, p := range Phases(sides[0]) {
			t.Notes = append(t.Notes, noteLines(fmt.Sprintf("part %d: %s", i+1, p.Title))...)
		}
	}
	t.Notes = append(t.Notes, "In memory a waiting retry sits in a timer, in no queue: nothing shows it.",
		"On the broker it sits in a wait queue: rabbitmqctl list_queues and the management UI show it.")
	return t
}

func peak(samples []int) int {
	p := 0
	for _, v := range samples {
		p = max(p, v)
	}
	return p
}

// peaks replaces each run of group samples by its largest, so a short
// burst still shows.
func peaks(samples []int, group int) []int {
	var out []int
	for i := 0; i < len(samples); i += group {
		out = append(out, peak(samples[i:min(i+group, len(samples))]))
	}
	return out
}

// setupTable says what had to exist before each run: nothing in memory;
// on the broker, the broker and the queues the run declared (each name
// once, however many parts declared it).
func setupTable(cfg Config, broker Side, series []lesson.Series) render.Table {
	var names []string
	declared := map[string]int{}
	for _, s := range series {
		if declared[s.Queue]++; declared[s.Queue] == 1 {
			names = append(names, s.Queue)
		}
	}
	t := render.Table{
		Title:  "Setup: what had to exist before the run",
		Header: []string{"backend", "needs"},
		Rows: [][]string{
			{"inmem", "nothing: the Go toolchain (channels, goroutines, time.AfterFunc)"},
			{"rabbit", cfg.BrokerInfo},
		},
	}
	again := ""
	if parts := len(Phases(broker)); parts > 1 && len(names) > 0 && declared[names[0]] == parts {
		again = fmt.Sprintf(", declared in each of %d parts", parts)
	}
	t.Rows = append(t.Rows, []string{"", fmt.Sprintf("%d durable queues with their TTL and dead-letter arguments%s:", len(names), again)})
	for _, line := range wrap(strings.Join(names, ", "), 80) {
		t.Rows = append(t.Rows, []string{"", line})
	}
	return t
}
