// Package lessons is QueueLab's curriculum: one file per lesson, each
// opening with what the student should notice, and the ordered registry All
// that the CLI, the TUI and the README table read.
//
// A lesson is a RunFunc per backend. It composes inmem or rabbit building
// blocks, reports everything through env.Stream, and may add measured
// tables with env.Report. It never prints.
package lessons

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// RunFunc runs one lesson on one backend. It returns when the lesson's work
// is finished or ctx ends; the caller then emits the summaries.
type RunFunc func(ctx context.Context, env *Env) error

// Lesson is one entry of the curriculum.
type Lesson struct {
	ID     string  // zero-padded, "Q07", so `go test -run Q1` does not match Q10
	Title  string  // short, for menus and tables
	Notice string  // two or three sentences: what the student should notice
	InMem  RunFunc // nil when the lesson has no in-memory variant
	Rabbit RunFunc // nil when the lesson has no RabbitMQ variant
}

// Number is the lesson's number without padding (7 for Q07).
func (l Lesson) Number() int {
	n, _ := strconv.Atoi(strings.TrimLeft(l.ID[1:], "0"))
	return n
}

// Slug is the lower-case id stamped on events ("q07").
func (l Lesson) Slug() string { return strings.ToLower(l.ID) }

// Backends lists the backends the lesson runs on, in-memory first.
func (l Lesson) Backends() []lab.Backend {
	var b []lab.Backend
	if l.InMem != nil {
		b = append(b, lab.InMem)
	}
	if l.Rabbit != nil {
		b = append(b, lab.Rabbit)
	}
	return b
}

// Runner returns the lesson's RunFunc for backend b, or nil.
func (l Lesson) Runner(b lab.Backend) RunFunc {
	switch b {
	case lab.InMem:
		return l.InMem
	case lab.Rabbit:
		return l.Rabbit
	}
	return nil
}

// All is the curriculum in order.
var All = []Lesson{
	q01,
	q02,
	q03,
	q04,
	q05,
	q06,
	q07,
	q08,
	q09,
	q10,
	q11,
	q12,
	q13,
}

// Find returns the lesson numbered n.
func Find(n int) (Lesson, bool) {
	for _, l := range All {
		if l.Number() == n {
			return l, true
		}
	}
	return Lesson{}, false
}

// Parse finds a lesson from user input: "7", "07", "q7" or "Q07".
func Parse(s string) (Lesson, error) {
	n, err := strconv.Atoi(strings.TrimLeft(strings.TrimPrefix(strings.ToLower(s), "q"), "0"))
	if l, ok := Find(n); err == nil && ok {
		return l, nil
	}
	return Lesson{}, fmt.Errorf("unknown lesson %s (see qlab list)", s)
}

// Env is what a lesson run gets: the stream to report to, the workload, and
// where to put measured tables.
type Env struct {
	Stream *lab.Stream
	Plan   lab.Plan
	// Broker is the AMQP URL of the broker, for RabbitMQ lessons.
	Broker string
	// SeedNames asks RabbitMQ lessons for the seed's exact queue names
	// (rabbit.SeedNames) instead of a per-run prefix (rabbit.RunNames).
	SeedNames bool
	// Prefix puts the seed names under a person's prefix (with SeedNames).
	Prefix string
	// Interrupt, when > 0, asks the lesson to let its process "die" this
	// long (lesson time) after its workers start (compare's persistence
	// row): in memory that loses what memory held; on a broker the workers'
	// connections drop and come back. Lessons that support it call
	// Interrupted when it happened.
	Interrupt time.Duration
	// Consumers is how many workers consume the main queue (at least 1).
	Consumers int

	tables      []render.Table
	mu          sync.Mutex
	probes      []probe
	interrupted bool
}

// probe reads one queue's depth for the sampler.
type probe struct {
	queue string
	depth func(context.Context) (int, error)
}

// Report adds a measured table to the run's result.
func (e *Env) Report(t render.Table) { e.tables = append(e.tables, t) }

// Watch registers a queue whose depth the run samples when Options.Sample
// asks for it (compare's observability row). depth must be safe to call
// from another goroutine and return promptly.
func (e *Env) Watch(queue string, depth func(context.Context) (int, error)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.probes = append(e.probes, probe{queue, depth})
}

// Interrupted records that the lesson carried out Env.Interrupt.
func (e *Env) Interrupted() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.interrupted = true
}

// interruptAfter calls die once Env.Interrupt of lesson time has passed
// from now (a lesson arms it once its workers run, so set-up time never
// counts), unless stop is called first. It fires at most once per lesson:
// a lesson made of several runs arms it in each, and a run that starts
// after an earlier one was interrupted is left alone. It does nothing when
// Interrupt is 0.
func (e *Env) interruptAfter(die func()) (stop func()) {
	e.mu.Lock()
	already := e.interrupted
	e.mu.Unlock()
	if e.Interrupt <= 0 || already {
		return func() {}
	}
	t := e.Stream.Clock().AfterFunc(e.Interrupt, func() {
		e.Interrupted() // first: die ends the run, and the run reads the mark
		die()
	})
	return func() { t.Stop() }
}
