package main

import (
	"flag"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
)

// The rates --rate accepts. Past maxRate arrivals per lesson second the
// gap between two is 100 µs of lesson time, all at once in practice;
// below minRate one task every quarter hour is no flow to watch, and a
// gap of 1 s / 1e-300 would overflow a time.Duration.
const (
	minRate = 0.001
	maxRate = 10_000.0
)

// scaleFlags are --tasks and --rate: the default scenario grown to N tasks
// arriving R per lesson second, for the lessons that declare Scales.
type scaleFlags struct {
	tasks int
	rate  float64
}

func (s *scaleFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&s.tasks, "tasks", 0, fmt.Sprintf("run N tasks (1 to %d, every fourth poison) instead of A, B, C, D; lessons that scale only", lab.MaxTasks))
	fs.Float64Var(&s.rate, "rate", 0, "tasks arrive R per lesson second instead of all at once; lessons that scale only")
}

// scaledRunMemory is the soft limit on the Go runtime's memory that a
// --tasks run sets, unless GOMEMLIMIT set one. The GC lets the heap grow
// to twice what is live before it collects, and a run's live heap grows
// with its tasks (the ledger's records, the tasks waiting, the plan):
// 13-18 MB at lab.MaxTasks, so the garbage it may leave about grew
// with them too. Under the limit the heap stays near it from 10,000
// tasks to lab.MaxTasks, for more frequent collections. 30 MiB, not
// 32: Q02's peak at 100,000 tasks was 1.53x its peak at 10,000, the
// goal is 1.5x, and the CPU stayed within the runs' spread; at 24 MiB
// the GC runs almost without a pause (docs/benchmarks.md).
const scaledRunMemory = 30 << 20

// limitMemory sets scaledRunMemory unless a memory limit is set already,
// and returns what restores the previous limit.
func limitMemory() (restore func()) {
	prev := debug.SetMemoryLimit(-1) // a negative limit only reads it
	if prev != math.MaxInt64 {
		return func() {}
	}
	debug.SetMemoryLimit(scaledRunMemory)
	return func() { debug.SetMemoryLimit(prev) }
}

// apply checks the values and returns plan grown and paced as asked. It
// refuses either flag for a lesson that runs a fixed scenario of its own.
func (s *scaleFlags) apply(fs *flag.FlagSet, l lesson.Lesson, plan *lab.Plan) (*lab.Plan, error) {
	tasksSet, rateSet := false, false
	fs.Visit(func(f *flag.Flag) {
		tasksSet = tasksSet || f.Name == "tasks"
		rateSet = rateSet || f.Name == "rate"
	})
	if !tasksSet && !rateSet {
		return plan, nil
	}
	if !l.Scales {
		return nil, usagef("lesson %d runs a fixed scenario of its own: --tasks and --rate work with lessons %s", l.Number(), scalingLessons())
	}
	if tasksSet {
		grown, err := lab.ScaledPlan(s.tasks)
		if err != nil {
			return nil, usagef("--tasks must be between 1 and %d, got %d", lab.MaxTasks, s.tasks)
		}
		grown.Seed, grown.FailRate = plan.Seed, plan.FailRate
		plan = &grown
	}
	if rateSet {
		if !(s.rate >= minRate && s.rate <= maxRate) {
			return nil, usagef("--rate must be between %g and %g tasks per lesson second, got %v", minRate, maxRate, s.rate)
		}
		plan.Every = time.Duration(float64(time.Second) / s.rate)
	}
	return plan, nil
}

// scalingLessons lists the numbers of the lessons that declare Scales.
func scalingLessons() string {
	var n []string
	for _, l := range lessons.All {
		if l.Scales {
			n = append(n, fmt.Sprint(l.Number()))
		}
	}
	return strings.Join(n, ", ")
}
