// Package lesson is what every lesson is made of: the Lesson a registry
// lists, the Env a run gets, Run, which runs one lesson on one backend and
// always ends the stream with one summary per task, and the plumbing
// lessons share (opening a flow backend through a registered Mechanism,
// the plan's producer). The lessons themselves live in lessons/qNN; the
// broker's plumbing (its session, names, clean-up) is in lesson/rabbitenv,
// which only the broker lessons import.
//
// A lesson is a RunFunc per backend. It composes inmem, rabbit or flow
// building blocks, reports everything through env.Stream, and may add
// measured tables with env.Report. It never prints.
package lesson

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// RunFunc runs one lesson on one backend. It returns when the lesson's work
// is finished or ctx ends; the caller then emits the summaries.
type RunFunc func(ctx context.Context, env *Env) error

// Lesson is one entry of the curriculum.
type Lesson struct {
	ID     string // zero-padded, "Q07", so `go test -run Q1` does not match Q10
	Title  string // short, for menus and tables
	Notice string // two or three sentences: what the student should notice
	// Notices holds the notice for a backend on which Notice would not be
	// true (Q10's broker story, run in memory); Notice serves the others,
	// and menus and tables. Read it through NoticeFor.
	Notices map[lab.Backend]string
	InMem   RunFunc // nil when the lesson has no in-memory variant
	Rabbit  RunFunc // nil when the lesson has no RabbitMQ variant
	// Default is the backend `qlab run N` uses without --backend; empty
	// means the first of Backends. A lesson about the broker defaults to it.
	Default lab.Backend
	// TestSpeed is the speed the broker tests run the lesson at: slow
	// enough for its waits to mean what they say on a loaded machine, fast
	// enough for the suite. 0 means the harness's default.
	TestSpeed float64
	// WatchSpeed is the speed the TUI starts the lesson at where its
	// default (0.25×) would make it too long a watch; 0 means the default.
	WatchSpeed float64
	// Length is about how much lesson time a whole run takes (the last
	// stamp of its transcript), for a lesson with a WatchSpeed above 1:
	// qlab run says how long a --speed slower than that pace will take
	// (Length / speed). A test holds it to the in-memory golden's last
	// stamp.
	Length time.Duration
	// CompareSpeed is the speed `qlab compare` runs the lesson at when no
	// --speed is given, where its default (20×) would make the runs too
	// long: a lesson whose waits are the seed's minutes (Q14). compare
	// stretches its own lesson-time workloads (the interruption, the depth
	// samples) by the same factor. 0 means compare's default.
	CompareSpeed float64
	// CompareInterrupt, when set, is when (in lesson time) `qlab compare`
	// interrupts the lesson's persistence runs: a moment when retries are
	// waiting, for a lesson whose retries start later than compare's
	// default (2 s, stretched by CompareSpeed) would find them (Q12's
	// outage starts at 5 s). 0 means compare's default.
	CompareInterrupt time.Duration
	// Parity says what the parity suite may compare between the backends
	// of a lesson that has both (fates and attempts always).
	Parity Parity
	// Faults enrols a broker lesson in the fault suite (lessons/faults):
	// it runs on a private node with the broker kept down past its
	// give-up, and meets the other faults (connections closed, a
	// restart, a queue deleted, the process killed) where its code takes
	// a path no other lesson does; every run must still account for
	// every task within its bound.
	Faults bool
	// Store says the broker run keeps a status store (lessons/runstore)
	// in the run's database: the fault suite (lessons/faults) then also
	// runs it with that database cut mid-run, and fails it if the run
	// never reached its database. A cluster lesson (Q21) leaves it unset:
	// the fault suite runs on a single node.
	Store bool
	// Cluster says the broker run needs a three-node cluster it may stop
	// nodes of (Q21): the one `qlab broker cluster up` recorded, never the
	// single broker. run.Prepare passes the cluster's nodes as
	// Options.Broker, or fails with one line on how to start one.
	Cluster bool
	// Topologies returns what the lesson's broker run declares: the very
	// values its RabbitMQ RunFunc passes to Declare (TTLs aside, which do
	// not change a name). AMQP cannot list a broker's queues, so this is
	// how `qlab broker clean` finds a killed run's. Every broker lesson
	// sets it; the fault suite's broker-down case checks it is complete.
	Topologies func() []flow.Topology
	// Scales says the lesson runs whatever plan it is given: any number of
	// tasks (lab.ScaledPlan) arriving at the plan's pace (Plan.Every), so
	// `qlab run --tasks N --rate R` means something. A lesson with a fixed
	// scenario of its own leaves it false and the CLI refuses those flags.
	Scales bool
	// LosesOnPurpose lists the tasks the lesson loses on purpose in its
	// runs, on whichever backend runs them: the loss is what it teaches (a
	// timer that held the only copy, a DLQ read with no-ack, a row left
	// stuck after a failed publish). Any other task that ends lost fails
	// the run (Unexpected, run.Ready.Start, qlab run's exit 1), and the
	// parity suite's crash test does not count these against a backend.
	LosesOnPurpose []string
	// MinBroker, when set ("4.3"), is the oldest RabbitMQ release the
	// broker run works on: it uses a feature older brokers refuse or
	// ignore (Q25's quorum queue delayed retry). The tests run such a
	// lesson on the 4.3 node (rabbittest.Need(t, V43)), never the 3.10.8
	// one.
	MinBroker string
	// Preflight, when set, checks before a broker run that the broker at
	// url can run the lesson; run.Prepare calls it once the broker is
	// found. Its error wraps ErrBrokerTooOld and says in one line what the
	// broker did instead; a CLI exits 2. The lesson calls it too, for a
	// caller that runs it without Prepare.
	Preflight func(ctx context.Context, url string) error
	// Actions are keys a student may press while the lesson runs in the
	// TUI (Q21's k stops the leader's node, v revives it). The TUI lists
	// them in its help line and hands each press to the run as an Act on
	// Options.Act; a lesson without them gets no keys.
	Actions []Action
}

// Action is one key a lesson takes while it runs (Lesson.Actions).
type Action struct {
	Key  string // one key, as bubbletea names it ("k"); never one of the TUI's own (its fault keys x and c included)
	Help string // a few words for the help line ("stop leader")
}

// Act is one press of an action key, handed to the run on Options.Act.
type Act struct {
	Key string
	// Answer, when set, gets one line on what the lesson made of the key
	// ("stopping rabbit-1", "no node is stopped: k stops the leader's");
	// the lesson sends at most one line and never blocks on it, so a
	// front end gives it a buffer of one.
	Answer chan<- string
}

// Reply sends line to a.Answer, if it is set and has room; it never blocks.
func (a Act) Reply(line string) {
	if a.Answer == nil {
		return
	}
	select {
	case a.Answer <- line:
	default:
	}
}

// Parity is what a dual-backend lesson declares to the parity suite,
// which runs it on both backends and compares every task's fate, its
// attempts and its configured waits.
type Parity struct {
	// TimingSensitive, when set, says why the lesson's outcome depends on
	// real time on the broker (e.g. a breaker whose state depends on when
	// calls land). The suite then runs only the default plan, compares
	// fates, and the distinct configured waits rather than each task's.
	TimingSensitive string
	// Plans are failure plans the suite runs besides its own (the
	// default and seeded fail rates).
	Plans []lab.Plan
	// ExactTimes says the lesson's timings follow from its plan alone:
	// each retry starts no sooner than its configured wait after the
	// failure. The suite then checks each task's gaps (failure → next
	// attempt): exactly equal between backends that both keep exact
	// lesson time (flow.Features.ExactTime), and on a backend that
	// measures real time never earlier than the wait. Unset, it compares
	// no timings.
	ExactTimes bool
	// Crashed lists the tasks a crash the lesson stages itself catches
	// (Q20's killed worker): they end as the backend's crash makes them
	// (lost in memory, redelivered on the broker), so TestParity leaves
	// their fates out of the comparison, and their loss on a backend that
	// does not survive a crash is on purpose (Lesson.Unexpected); the
	// lesson's own tests hold them.
	Crashed []string
	// Raced, when set, returns the tasks of a run whose fate the
	// broker's real-time lateness decided, each by a rule the lesson
	// states and its events show (Q24: a user saved because a late retry
	// ended after the outage did). TestParity leaves their fates out of
	// the comparison; a fate that differs with no such reason still fails.
	Raced func(events []lab.Event) []string
}

// DefaultBackend is the backend the lesson runs on when none is named.
func (l Lesson) DefaultBackend() lab.Backend {
	if l.Default != "" && l.Runner(l.Default) != nil {
		return l.Default
	}
	if b := l.Backends(); len(b) > 0 {
		return b[0]
	}
	return lab.InMem
}

// NoticeFor is what to notice when the lesson runs on backend b: its
// notice for b if it has one, else Notice.
func (l Lesson) NoticeFor(b lab.Backend) string {
	if n, ok := l.Notices[b]; ok {
		return n
	}
	return l.Notice
}

// Dual reports whether the lesson runs on both backends (and so joins the
// parity suite and qlab compare).
func (l Lesson) Dual() bool { return l.InMem != nil && l.Rabbit != nil }

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

// Env is what a lesson run gets: the options it was run with (one type:
// the backend, speed, broker, names, interrupt, consumers, bound and
// logger of Options, read as env.Broker, env.Consumers …), the stream to
// report to, the workload, and where to put measured tables.
type Env struct {
	Options
	Stream *lab.Stream
	// Plan is the run's workload: Options.Plan, or lab.DefaultPlan().
	Plan lab.Plan

	tables        []render.Table
	topologyShown bool
	held          map[any]any // what a mechanism keeps for the whole run (Hold)
	mu            sync.Mutex
	probes        []probe
	interrupted   bool
	interruptedAt time.Duration // lesson time, as events are stamped
	closeErrs     []error       // clean-ups that failed (Close), for Run's error
}

// probe reads one queue's depth for the sampler.
type probe struct {
	queue string
	depth func(context.Context) (int, error)
}

// Report adds a measured table to the run's result.
func (e *Env) Report(t render.Table) { e.tables = append(e.tables, t) }

// Tables returns the tables reported so far (for a test that runs a part
// of a lesson on an Env of its own).
func (e *Env) Tables() []render.Table { return append([]render.Table(nil), e.tables...) }

// Watch registers a queue whose depth the run samples when Options.Sample
// asks for it (compare's observability row). depth must be safe to call
// from another goroutine and return promptly.
func (e *Env) Watch(queue string, depth func(context.Context) (int, error)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.probes = append(e.probes, probe{queue, depth})
}

// Hold keeps v under key for the rest of the run: state a mechanism needs
// across the backends a lesson in parts opens (the broker's kept session
// under Keep). Held reads it back; nil if nothing is held.
func (e *Env) Hold(key, v any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.held == nil {
		e.held = map[any]any{}
	}
	e.held[key] = v
}

// Held is what Hold kept under key, or nil.
func (e *Env) Held(key any) any {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held[key]
}

// Interrupted records that the lesson carried out Env.Interrupt, and
// when, on the clock the run's events are stamped by (Result.InterruptedAt).
func (e *Env) Interrupted() {
	at := e.Stream.Clock().Elapsed()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.interrupted {
		e.interrupted, e.interruptedAt = true, at
	}
}

// InterruptAfter calls die once Env.Interrupt of lesson time has passed
// from now (a lesson arms it once its workers run, so set-up time never
// counts), unless stop is called first. It fires at most once per lesson:
// a lesson made of several runs arms it in each, and a run that starts
// after an earlier one was interrupted is left alone. It does nothing when
// Interrupt is 0.
func (e *Env) InterruptAfter(die func()) (stop func()) {
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
