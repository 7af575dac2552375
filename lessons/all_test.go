package lessons

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/render"
)

// goldenPath is where lesson l's in-memory transcript lives.
func goldenPath(l lesson.Lesson) string {
	return filepath.Join("..", "testdata", "golden", l.Slug()+".inmem.log")
}

// TestGolden compares every in-memory lesson's transcript, Mermaid
// diagram and JSON stream (the public contract of qlab run N --json) with
// their golden files (testdata/golden/qNN.inmem.log, .mmd and .json);
// `go test ./lessons -run Golden -update` rewrites them.
func TestGolden(t *testing.T) {
	t.Parallel() // reads its goldens only (-update writes them: -run Golden alone)
	for _, l := range All {
		if l.InMem == nil {
			continue
		}
		t.Run(l.ID, func(t *testing.T) {
			t.Parallel() // a bubble of its own, a golden file of its own
			events, res := lessontest.RunInMem(t, l, lesson.Options{})
			var log, diagram, stream bytes.Buffer
			render.Transcript(&log, events, res.Tables)
			render.Mermaid(&diagram, events)
			writeJSONLines(&stream, events)
			base := strings.TrimSuffix(goldenPath(l), ".log")
			labtest.Golden(t, goldenPath(l), log.String())
			labtest.Golden(t, base+".mmd", diagram.String())
			labtest.Golden(t, base+".json", stream.String())
		})
	}
}

// writeJSONLines writes events as qlab run N --json does, in the
// canonical order of render.Canonical (goroutines that woke at one
// instant emit in any order) with seq counted in that order, so the
// golden is the same on every run.
func writeJSONLines(w io.Writer, events []lab.Event) {
	sink := render.NewJSONSink(w)
	for i, e := range render.Canonical(events) {
		e.Seq = i + 1
		sink.Emit(e)
	}
}

// TestEveryTaskAccountedFor checks the invariant of every run, for every
// lesson on every backend it has (RabbitMQ on the real broker): each task
// created gets exactly one summary, the summaries close the stream, and each
// summary's fate and attempts agree with the events before it. The default
// run also loses only what the lesson declares (assertLostOnlyOnPurpose).
func TestEveryTaskAccountedFor(t *testing.T) {
	t.Parallel() // beside the package's other broker suites: the runs mostly wait on the broker's timers
	for _, l := range slowestFirst() {
		for _, b := range l.Backends() {
			for _, on := range runsOn(b) {
				for _, plan := range accountedPlans(l) {
					t.Run(l.ID+"/"+on.name+"/"+plan.name, func(t *testing.T) {
						on.start(t, l, plan.recording)
						t.Parallel() // broker runs declare under names of their own (rabbit.RunNames)
						events, res := on.run(t, l, plan.recording)
						labtest.AssertAccounted(t, events)
						if plan.recording == "default" {
							assertLostOnlyOnPurpose(t, l, b, res)
						}
					})
				}
			}
		}
	}
}

// accountedPlan is one plan TestEveryTaskAccountedFor runs: the subtest's
// name and the recording (recordedOpts) it reads.
type accountedPlan struct{ name, recording string }

// accountedPlans are the plans TestEveryTaskAccountedFor runs l over: the
// default, and a seeded failure plan unless -short (make quick: one
// broker pass) or the plan cannot change what l does (seedBlind).
func accountedPlans(l lesson.Lesson) []accountedPlan {
	out := []accountedPlan{{"default", "default"}}
	if _, blind := seedBlind[l.ID]; !blind && !testing.Short() {
		out = append(out, accountedPlan{"seeded", "seed7"})
	}
	return out
}

// seedBlind lists the lessons whose run a seeded failure plan does not
// change but for where it lands a cut, and why: its seeded run would be
// the default run again, at the cost of another broker run.
var seedBlind = map[string]string{
	"Q17": "its jobs are its own and never fail; the plan's seed only moves where its publisher's " +
		"connection is cut (q17's TestQ17CutPointIsSeededInTheSecondHalf), and each of its broker runs " +
		"measures publishing in real time, seconds even brief (recordedOpts)",
}

// slowestFirst is All with the lessons whose broker runs take longest
// first (slowBroker), so that the suites queue those first
// (lessontest.Start) and the package does not end waiting on one of
// them started last.
func slowestFirst() []lesson.Lesson {
	rank := func(l lesson.Lesson) int {
		if i := slices.Index(slowBroker, l.ID); i >= 0 {
			return i
		}
		return len(slowBroker)
	}
	out := slices.Clone(All)
	slices.SortStableFunc(out, func(a, b lesson.Lesson) int { return rank(a) - rank(b) })
	return out
}

// slowBroker lists the lessons whose default broker run took longest
// (2026-11-27, the lessons package alone at load 30-50: Q17 86 s, Q24
// 23 s, Q25 16 s, Q18 and Q19 13 s, Q14 12 s, Q23 11 s; the others under
// 10 s), slowest first.
var slowBroker = []string{"Q17", "Q24", "Q25", "Q18", "Q19", "Q14", "Q23"}

// recordedOpts are the options of lesson l's run named name, as the
// suites share it (lessontest.Recorded): "default" is the default plan,
// sampling queue depths where TestParity reads them (a lesson with both
// backends; sampling adds probes, not events or tables); "seed3" and
// "seed7" the seeded failure plans; "lessonN" the lesson's N-th own
// parity plan (Parity.Plans). Every one is Brief: the suites that read
// them check the stream and the tables' shape, not a lesson's figures
// (Q17's own package checks those on a full run).
func recordedOpts(t *testing.T, l lesson.Lesson, name string) lesson.Options {
	t.Helper()
	opts := plannedOpts(t, l, name)
	opts.Brief = true
	return opts
}

// plannedOpts are recordedOpts but for Brief: the plan (and sampling) of
// the run named name.
func plannedOpts(t *testing.T, l lesson.Lesson, name string) lesson.Options {
	t.Helper()
	var i int
	switch {
	case name == "default" && l.Dual():
		return lesson.Options{Sample: sampleEvery(l)}
	case name == "default":
		return lesson.Options{}
	case name == "seed3":
		return lesson.Options{Plan: lessontest.SeededPlan(3)}
	case name == "seed7":
		return lesson.Options{Plan: lessontest.SeededPlan(7)}
	}
	if _, err := fmt.Sscanf(name, "lesson%d", &i); err != nil || i < 1 || i > len(l.Parity.Plans) {
		t.Fatalf("no recording %q of %s", name, l.ID)
	}
	return lesson.Options{Plan: &l.Parity.Plans[i-1]}
}

// backendRun is one place a suite runs a lesson: in memory, or on the
// broker of one RabbitMQ release line.
type backendRun struct {
	name   string             // "inmem", "rabbit" (3.10), "rabbit@4.3"
	broker bool               // on the broker of line v, else in memory
	v      rabbittest.Version // the broker's line
}

// start queues the broker run of l that run reads (lessontest.Start):
// call it before t.Parallel. In memory it does nothing.
func (b backendRun) start(t *testing.T, l lesson.Lesson, recording string) {
	t.Helper()
	if b.broker {
		lessontest.Start(t, b.v, l, recording, recordedOpts(t, l, recording))
	}
}

// run runs l with the options recordedOpts names: in memory each time
// (instant), on the broker once per test process (lessontest.Recorded).
func (b backendRun) run(t *testing.T, l lesson.Lesson, recording string) ([]lab.Event, lesson.Result) {
	t.Helper()
	if b.broker {
		return lessontest.Recorded(t, b.v, l, recording, recordedOpts(t, l, recording))
	}
	return lessontest.RunInMem(t, l, recordedOpts(t, l, recording))
}

// runsOn lists where a suite runs a lesson of backend b: every broker
// lesson meets each line of rabbittest.Versions (a missing one skips
// with the reason, or fails under QLAB_REQUIRE_BROKER=1).
func runsOn(b lab.Backend) []backendRun {
	if b != lab.Rabbit {
		return []backendRun{{name: string(b)}}
	}
	var runs []backendRun
	for _, v := range brokerLines() {
		runs = append(runs, backendRun{name: string(b) + versionTag(v), broker: true, v: v})
	}
	return runs
}

// brokerLines are the broker lines the suites run on: every line of
// rabbittest.Versions, or under -short (make quick: one broker pass) the
// first, the machine's own.
func brokerLines() []rabbittest.Version {
	if testing.Short() {
		return rabbittest.Versions[:1]
	}
	return rabbittest.Versions
}

// versionTag names a broker line in a subtest's name: nothing for the
// machine's own 3.10 node (the names the suites have always had), "@4.3".
func versionTag(v rabbittest.Version) string {
	if v == rabbittest.V310 {
		return ""
	}
	return "@" + string(v)
}

// assertLostOnlyOnPurpose: a lesson's default run loses only the tasks it
// declares (Lesson.LosesOnPurpose), and each of those it does lose, so a
// declaration cannot go stale; anything else lost would fail qlab run.
func assertLostOnlyOnPurpose(t *testing.T, l lesson.Lesson, b lab.Backend, res lesson.Result) {
	t.Helper()
	assert.Empty(t, l.Unexpected(b, res.Tasks), "%s lost tasks it does not declare in LosesOnPurpose", l.ID)
	fates := map[string]lab.Fate{}
	for _, task := range res.Tasks {
		fates[task.ID] = task.Fate
	}
	for _, id := range l.LosesOnPurpose {
		if f, ok := fates[id]; ok {
			assert.Equal(t, lab.FateLost, f, "%s declares %s lost on purpose", l.ID, id)
		}
	}
	assert.NoError(t, lesson.CheckLost(l, lesson.Options{Backend: b}, res, nil))
}

// TestEveryBrokerLessonListsWhatItDeclares: qlab broker clean removes a
// killed run's queues by the names the lessons declare, so a lesson that
// runs on the broker without listing them would leave its queues behind.
func TestEveryBrokerLessonListsWhatItDeclares(t *testing.T) {
	for _, l := range All {
		if l.Rabbit == nil {
			continue
		}
		if assert.NotNil(t, l.Topologies, "%s runs on the broker: set lesson.Lesson.Topologies", l.ID) {
			assert.NotEmpty(t, l.Topologies(), "%s declares something", l.ID)
		}
	}
}
