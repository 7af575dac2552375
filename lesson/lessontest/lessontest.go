// Package lessontest runs lessons in tests: in memory inside a synctest
// bubble (fake, instant, deterministic time), on the test broker at the
// lesson's test speed. Test code only.
package lessontest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/render"
)

// RabbitSpeed is the broker tests' speed for a lesson without a TestSpeed
// of its own: 1 s of lesson time is 50 ms.
const RabbitSpeed = 20

// RunInMem runs lesson l on the in-memory backend inside a synctest
// bubble and returns its events and result; the run must not fail.
func RunInMem(t *testing.T, l lesson.Lesson, opts lesson.Options) ([]lab.Event, lesson.Result) {
	t.Helper()
	var rec lab.Recorder
	var res lesson.Result
	opts.Backend = lab.InMem
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = lesson.Run(context.Background(), l, opts, &rec)
		require.NoError(t, err)
	})
	return rec.Events, res
}

// runBound bounds one broker run in a test. Q17 measures each confirm
// strategy five times (about 27 s on an idle machine); with two busy cores
// and the suite's other packages beside it, it took over a minute, and
// with the broker lessons of Q18-Q24 beside it in the lessons package
// over three (TestWidth/Q17 in a fresh-clone CI run).
const runBound = 6 * time.Minute

// RunRabbit runs lesson l on the test broker (skipping without one,
// failing under QLAB_REQUIRE_BROKER=1, and skipping a lesson that needs a
// cluster, Lesson.Cluster; a lesson that needs 4.3, Lesson.MinBroker,
// runs on the 4.3 node) at its TestSpeed, or opts.Speed
// when set, bounded by runBound; the run must not fail.
func RunRabbit(t *testing.T, l lesson.Lesson, opts lesson.Options) ([]lab.Event, lesson.Result) {
	t.Helper()
	return RunRabbitWith(t, l, opts)
}

// RunRabbitOn is RunRabbit on a broker of release line v
// (rabbittest.Need: skipping where there is none, failing under
// QLAB_REQUIRE_BROKER=1).
func RunRabbitOn(t *testing.T, v rabbittest.Version, l lesson.Lesson, opts lesson.Options) ([]lab.Event, lesson.Result) {
	t.Helper()
	skipCluster(t, l)
	skipOlder(t, v, l)
	opts.Broker = rabbittest.Need(t, v)
	return RunRabbitWith(t, l, opts)
}

// RunRabbitWith is RunRabbit with sinks that see each event as the run
// emits it (a test that acts on the broker while the lesson runs). It
// runs on opts.Broker when set, else on the test broker.
func RunRabbitWith(t *testing.T, l lesson.Lesson, opts lesson.Options, sinks ...lab.Sink) ([]lab.Event, lesson.Result) {
	t.Helper()
	skipCluster(t, l)
	if opts.Broker == "" {
		opts.Broker = testBroker(t, l)
	}
	events, res, err := runRabbit(t, l, opts, sinks...)
	require.NoError(t, err)
	return events, res
}

// runRabbit runs l on the broker at opts.Broker, at its TestSpeed unless
// opts.Speed is set, bounded by runBound, and holds its goroutines to
// NoGoroutineOutlives.
func runRabbit(t *testing.T, l lesson.Lesson, opts lesson.Options, sinks ...lab.Sink) ([]lab.Event, lesson.Result, error) {
	t.Helper()
	var events []lab.Event
	var res lesson.Result
	var err error
	NoGoroutineOutlives(t, func() { events, res, err = runBounded(l, opts, sinks...) })
	return events, res, err
}

// runBounded is runRabbit without the goroutine check.
func runBounded(l lesson.Lesson, opts lesson.Options, sinks ...lab.Sink) ([]lab.Event, lesson.Result, error) {
	opts.Backend = lab.Rabbit
	if opts.Speed == 0 {
		opts.Speed = RabbitSpeed
		if l.TestSpeed > 0 {
			opts.Speed = l.TestSpeed
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	var rec labtest.Recorder
	res, err := lesson.Run(ctx, l, opts, append(sinks, &rec)...)
	return rec.Events(), res, err
}

// testBroker is the broker l's tests run on: the 4.3 node for a lesson
// that needs 4.3 (Lesson.MinBroker), else the suites' broker; each skips
// with the reason when missing (fails under QLAB_REQUIRE_BROKER=1).
func testBroker(t *testing.T, l lesson.Lesson) string {
	t.Helper()
	if l.MinBroker != "" {
		return rabbittest.Need(t, rabbittest.V43)
	}
	return rabbittest.NeedBroker(t)
}

// skipCluster skips a lesson that needs a cluster (Lesson.Cluster).
func skipCluster(t *testing.T, l lesson.Lesson) {
	t.Helper()
	if l.Cluster {
		t.Skipf("%s runs on a three-node cluster and stops one of its nodes: the suites' single "+
			"broker cannot host it; its own tests run it on a cluster (rabbit/cluster/clustertest)", l.ID)
	}
}

// skipOlder skips a lesson that needs a newer broker line than v
// (Lesson.MinBroker): Q25 on 3.10, whose own tests hold what it says
// there.
func skipOlder(t *testing.T, v rabbittest.Version, l lesson.Lesson) {
	t.Helper()
	if l.MinBroker != "" && !lesson.VersionAtLeast(string(v), l.MinBroker) {
		t.Skipf("%s needs RabbitMQ %s or newer; on %s it says so and stops, which its own tests hold",
			l.ID, l.MinBroker, v)
	}
}

// On runs l on backend b with RunInMem or RunRabbit.
func On(t *testing.T, b lab.Backend, l lesson.Lesson, opts lesson.Options) ([]lab.Event, lesson.Result) {
	t.Helper()
	if b == lab.Rabbit {
		return RunRabbit(t, l, opts)
	}
	return RunInMem(t, l, opts)
}

// SeededPlan is the default plan with a 30 % transient fail rate drawn
// from seed.
func SeededPlan(seed int64) *lab.Plan {
	p := lab.DefaultPlan()
	p.Seed, p.FailRate = seed, 0.3
	return &p
}

// TableTitled finds the table whose title starts with prefix.
func TableTitled(t *testing.T, tables []render.Table, prefix string) render.Table {
	t.Helper()
	for _, tb := range tables {
		if strings.HasPrefix(tb.Title, prefix) {
			return tb
		}
	}
	t.Fatalf("no table %q", prefix)
	return render.Table{}
}

// recording is one broker run that every test reading it shares.
type recording struct {
	claim  sync.Once     // the run is Started in the background or run by its first reader
	done   chan struct{} // closed when the run ended
	l      lesson.Lesson
	opts   lesson.Options
	events []lab.Event
	res    lesson.Result
	err    error // the run's, or its goroutines' that outlived it
}

// recordings holds the process's recordings by Recorded's key.
var recordings sync.Map // string → *recording

// Recorded runs l on the broker of line v with opts (RunRabbitOn's
// skips, speed and bounds) once per test process, and returns that run's
// events and result to every test that asks for the same name: tests that
// only read a run (its accounting, its width, its fates against the
// in-memory run's) share one instead of each repeating it. name stands
// for opts ("default", "seed7"): the same name must come with equal
// options, or the test fails. Unless Start queued it, the first caller's
// test runs it. Its goroutines are held to NoGoroutineOutlives: a run
// that fails, or leaves a goroutine, fails every test that reads it. Safe
// for parallel tests: the others wait for it.
func Recorded(t *testing.T, v rabbittest.Version, l lesson.Lesson, name string, opts lesson.Options) ([]lab.Event, lesson.Result) {
	t.Helper()
	rec := recordingOf(t, v, l, name, opts)
	rec.claim.Do(rec.record)
	<-rec.done
	require.NoError(t, rec.err, "the recorded run %s of %s on %s", name, l.ID, v)
	return rec.events, rec.res
}

// Start queues the run Recorded would make, so that it is under way, or
// done, when a test asks for it: call it before t.Parallel, slowest runs
// first. Queued runs start in the order queued, as many at once as
// -parallel allows tests (they wait on the broker's timers, not a CPU),
// whatever holds the tests' own slots; a run already queued or done is
// left alone. It skips or fails t as Recorded would.
func Start(t *testing.T, v rabbittest.Version, l lesson.Lesson, name string, opts lesson.Options) {
	t.Helper()
	rec := recordingOf(t, v, l, name, opts)
	rec.claim.Do(func() { queue.add(rec) })
}

// recordingOf is the recording of l on line v named name, made on first
// use, after RunRabbitOn's skips.
func recordingOf(t *testing.T, v rabbittest.Version, l lesson.Lesson, name string, opts lesson.Options) *recording {
	t.Helper()
	skipCluster(t, l)
	skipOlder(t, v, l)
	opts.Broker = rabbittest.Need(t, v)
	r, _ := recordings.LoadOrStore(string(v)+"/"+l.ID+"/"+name,
		&recording{l: l, opts: opts, done: make(chan struct{})})
	rec := r.(*recording)
	if !reflect.DeepEqual(rec.opts, opts) {
		t.Fatalf("recording %s of %s on %s: asked for with options %+v, recorded with %+v", name, l.ID, v, opts, rec.opts)
	}
	return rec
}

// record makes the run, then closes done. A panic in it (not in the
// run's own goroutines) is the recording's error: a queued run has no
// test to fail.
func (r *recording) record() {
	defer close(r.done)
	defer func() {
		if p := recover(); p != nil {
			r.err = fmt.Errorf("the recorded run panicked: %v\n%s", p, debug.Stack())
		}
	}()
	var err error
	left := outlived(leakBound, func() { r.events, r.res, err = runBounded(r.l, r.opts) })
	if len(left) > 0 {
		err = errors.Join(err, errors.New(leakReport(left, leakBound)))
	}
	r.err = err
}

// queue runs Started recordings in the order queued.
var queue recordQueue

// recordQueue is a FIFO of recordings and the workers that run them.
type recordQueue struct {
	mu      sync.Mutex
	waiting []*recording
	workers int
}

// add queues r and starts a worker if fewer than -parallel are running.
func (q *recordQueue) add(r *recording) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting = append(q.waiting, r)
	if q.workers < parallel() {
		q.workers++
		go q.work()
	}
}

// work runs queued recordings until none is left.
func (q *recordQueue) work() {
	for {
		q.mu.Lock()
		if len(q.waiting) == 0 {
			q.workers--
			q.mu.Unlock()
			return
		}
		r := q.waiting[0]
		q.waiting = q.waiting[1:]
		q.mu.Unlock()
		r.record()
	}
}

// parallel is go test's -parallel: how many tests run at once.
func parallel() int {
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, ok := f.Value.(flag.Getter).Get().(int); ok && n > 0 {
			return n
		}
	}
	return runtime.GOMAXPROCS(0)
}
