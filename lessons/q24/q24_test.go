package q24

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/lessons/runstore"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/raffle"
	"github.com/queuelab/qlab/store"
)

// outcome is one run of the lesson: every task's record and the tables.
type outcome struct {
	tasks  map[string]lab.TaskRecord
	tables []render.Table
	lately []string // LatelySaved of the run's events
}

// runOn runs the whole lesson on b (the broker half skips without a
// broker, fails under QLAB_REQUIRE_BROKER=1, and keeps its users in
// SQLite, or PostgreSQL with QLAB_DATABASE_URL).
func runOn(t *testing.T, b lab.Backend) outcome {
	t.Helper()
	events, res := lessontest.On(t, b, Lesson, lesson.Options{})
	o := outcome{tasks: map[string]lab.TaskRecord{}, tables: res.Tables, lately: LatelySaved(events)}
	for _, r := range res.Tasks {
		o.tasks[r.ID] = r
	}
	return o
}

// cell is the cell under column col of the row whose first cell is key.
func (o outcome) cell(t *testing.T, title, key, col string) string {
	t.Helper()
	tb := lessontest.TableTitled(t, o.tables, title)
	c := -1
	for i, h := range tb.Header {
		if h == col {
			c = i
		}
	}
	require.GreaterOrEqual(t, c, 0, "column %q of %q", col, title)
	for _, row := range tb.Rows {
		if row[0] == key {
			return row[c]
		}
	}
	t.Fatalf("no row %q in %q", key, title)
	return ""
}

func (o outcome) fate(t *testing.T, task string) (lab.Fate, int) {
	t.Helper()
	r, ok := o.tasks[task]
	require.True(t, ok, "task %s", task)
	return r.Fate, r.Attempts
}

// TestQ24 runs the lesson once on each backend and checks each part.
func TestQ24(t *testing.T) {
	for _, b := range []lab.Backend{lab.InMem, lab.Rabbit} {
		t.Run(string(b), func(t *testing.T) {
			o := runOn(t, b)
			t.Run("a recovery window", func(t *testing.T) { checkRecovery(t, o, b) })
			t.Run("b both readings", func(t *testing.T) { checkReadings(t, o) })
			t.Run("c crash duplicates", func(t *testing.T) { checkCrash(t, o) })
			t.Run("d malformed both readings", func(t *testing.T) { checkMalformed(t, o) })
			t.Run("e hot loop and fix", func(t *testing.T) { checkDLQLoop(t, o, b) })
			for id, r := range o.tasks {
				assert.NotEqual(t, lab.FatePending, r.Fate, "%s accounted for", id)
				assert.NotEqual(t, lab.FateLost, r.Fate, "%s accounted for", id)
			}
		})
	}
}

// (a): three deliveries 10 s apart span 20 s: an outage shorter than that
// saves every user, a longer one parks every user. In memory the times are
// exact. On a broker a hop is the TTL plus the broker's and the
// consumer's time, and under load a 30 s outage's users were saved in some
// runs (hops of 13–15 s): the lesson says the fate depends on timing, and
// each group's fate must follow when its deliveries really ran: the DB is
// read as a delivery begins, so a group saves a user only if its last
// delivery began after the outage ("last began"), and the parity suite
// leaves out only the users LatelySaved names (in memory, none).
func checkRecovery(t *testing.T, o outcome, b lab.Backend) {
	cell := func(outage, col string) string { return o.cell(t, "(a)", outage, col) }
	for _, outage := range []string{"5 s", "15 s"} { // the DB is back by the third delivery, however late
		assert.Equal(t, "2", cell(outage, "saved"), "users saved from a %s outage", outage)
	}
	tb := lessontest.TableTitled(t, o.tables, "(a)")
	assert.Contains(t, strings.Join(tb.Notes, " "), "Which fate depends on timing")
	for _, outage := range Outages {
		row := fmt.Sprintf("%d s", int(outage.Seconds()))
		last, hop := secondsCell(t, cell(row, "last began")), secondsCell(t, cell(row, "longest hop"))
		assert.GreaterOrEqual(t, hop, 10.0, "%s: no hop is shorter than the TTL", row)
		if last < outage.Seconds() { // every delivery of the group met the outage
			assert.Equal(t, "0", cell(row, "saved"), "%s: the last delivery ran from %.1f s, during the outage", row, last)
			assert.Equal(t, "2", cell(row, "to raffle_dlq"), row)
		}
		if cell(row, "saved") != "0" {
			assert.GreaterOrEqual(t, last, outage.Seconds(),
				"%s: a user saved only after the outage ended (last began %.1f s)", row, last)
		}
	}
	if b == lab.InMem { // exact lesson time: the last delivery begins 20 s and a few steps on
		assert.Equal(t, "20.4 s", cell("30 s", "last began"))
		assert.Equal(t, "10.1 s", cell("30 s", "longest hop"))
	}
	if b == lab.InMem {
		assert.Empty(t, o.lately, "exact lesson time: no delivery ends after an outage the retries cannot reach")
	}
	for _, task := range []string{"a30-1", "a45-2"} {
		if slices.Contains(o.lately, task) {
			t.Logf("%s: the hops stretched past the outage (a loaded machine); its fate followed them", task)
			continue
		}
		fate, attempts := o.fate(t, task)
		assert.Equal(t, lab.FateDead, fate, task)
		assert.Equal(t, 3, attempts, "%s: three deliveries, then raffle_dlq", task)
	}
}

// secondsCell reads a table's "20.4 s".
func secondsCell(t *testing.T, cell string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.TrimSuffix(cell, " s"), 64)
	require.NoError(t, err, cell)
	return v
}

// (b): "max 3 attempts" read as attempts allows 3 deliveries; read as
// x-retries (absent at first) it allows 4.
func checkReadings(t *testing.T, o outcome) {
	for task, want := range map[string]int{readAttempts: 3, readRetries: 4} {
		fate, attempts := o.fate(t, task)
		assert.Equal(t, lab.FateDead, fate, task)
		assert.Equal(t, want, attempts, task)
	}
	assert.Equal(t, "0, 1, 2", o.cell(t, "(b)", readAttempts, "x-retries seen"))
	assert.Equal(t, "0, 1, 2, 3", o.cell(t, "(b)", readRetries, "x-retries seen"))
}

// (c): the crash between the retry's publish and the ack leaves two
// messages of one user; the redelivered original carries the lower count
// and stores the user, the copy ends in raffle_dlq; one row.
func checkCrash(t *testing.T, o outcome) {
	fate, _ := o.fate(t, crashed)
	assert.Equal(t, lab.FateDone, fate)
	fate, _ = o.fate(t, crashedCopy)
	assert.Equal(t, lab.FateDead, fate, "the copy of a stored user ends in the DLQ")
	assert.Equal(t, "0, 0", o.cell(t, "(c)", crashed, "x-retries seen"))
	assert.Equal(t, "1, 2", o.cell(t, "(c)", crashedCopy, "x-retries seen"))
	tb := lessontest.TableTitled(t, o.tables, "(c)")
	assert.Contains(t, tb.Notes[0], "Users stored: 1.")
}

// (d): the same body cut short, parked under one reading, discarded under
// the other; neither retried.
func checkMalformed(t *testing.T, o outcome) {
	fate, attempts := o.fate(t, badToDLQ)
	assert.Equal(t, lab.FateDead, fate)
	assert.Equal(t, 1, attempts)
	fate, attempts = o.fate(t, badDropped)
	assert.Equal(t, lab.FateDropped, fate)
	assert.Equal(t, 1, attempts)
	assert.Equal(t, "true", o.cell(t, "(d)", badToDLQ, "in raffle_dlq"))
	assert.Equal(t, "false", o.cell(t, "(d)", badDropped, "in raffle_dlq"))
}

// (e): the seed's requeue spins (the bad message only the guard ends, the
// user hammering the DB until it is back); the fix tries each message at
// most 3 times, 10 s apart, and parks the bad one at once. How often the
// user spins while the DB is away is a rate: in memory it is exact, on a
// broker every spin is a round trip of real time, and on a busy machine
// the 2 s outage (100 ms real at 20×) held one spin. There the counts
// that hold are the guard's (hotTries) and the fix's.
func checkDLQLoop(t *testing.T, o outcome, b lab.Backend) {
	num := func(key, col string) float64 {
		v, err := strconv.ParseFloat(o.cell(t, "(e)", key, col), 64)
		require.NoError(t, err)
		return v
	}
	seed, fix := seedDLQ.name, fixedDLQ.name
	fate, badTries := o.fate(t, seedDLQ.bad)
	assert.Equal(t, lab.FateDropped, fate, "only the lab's guard stops the seed's loop")
	assert.GreaterOrEqual(t, badTries, hotTries, "a message that can never succeed, again and again")
	assert.Greater(t, badTries, dlqTries)
	userFate, userTries := o.fate(t, seedDLQ.user)
	assert.Equal(t, lab.FateDone, userFate, "saved once the DB is back")
	if b == lab.InMem {
		assert.Greater(t, userTries, dlqTries, "the user hammers the DB while it is away")
		assert.Greater(t, num(seed, "inserts/s"), num(fix, "inserts/s"))
		assert.Greater(t, num(seed, "deliveries/s"), 2*num(fix, "deliveries/s"))
	}

	fate, attempts := o.fate(t, fixedDLQ.bad)
	assert.Equal(t, lab.FateDead, fate, "parked at once")
	assert.Equal(t, 1, attempts)
	assert.True(t, strings.HasSuffix(o.cell(t, "(e)", fix, "bad JSON (tries: end)"), Parked))
	fate, attempts = o.fate(t, fixedDLQ.user)
	assert.Equal(t, lab.FateDone, fate)
	assert.Equal(t, 2, attempts, "one try while the DB is away, one 10 s later")
	assert.Equal(t, 0.5, num(fix, "inserts/s"))
	libs := lessontest.TableTitled(t, o.tables, "The seeds' libraries on part (e)'s loop")
	assert.Contains(t, fmt.Sprint(libs.Rows), "amqplib 2.3.1, one message at a time")
	assert.Contains(t, fmt.Sprint(libs.Rows), "the user 1.0/s", "Broadway's user waits its batch timer")
	notes := strings.Join(libs.Notes, " ")
	for _, s := range []string{"broadway_rabbitmq 0.8.2: on_failure defaults to :reject_and_requeue",
		"Broadway 1.3.0 acks a failed message in the processor stage", "the bad JSON fails in " +
			"the processor and spins"} {
		assert.Contains(t, notes, s)
	}
	labs := strings.Join(lessontest.TableTitled(t, o.tables, "(e)").Notes, " ")
	assert.Contains(t, labs, "This is the lab's consumer", "the lab's figure labelled as the lab's")
	assert.Contains(t, labs, "The seed's Broadway consumer has the other shape")
	if b == lab.InMem { // exact lesson time: a delivery every 50 ms, two messages
		assert.Equal(t, 20.0, num(seed, "deliveries/s"))
		assert.Equal(t, 59, badTries)
		assert.Equal(t, 21, userTries)
	}
}

// TestRowsMatchNamesAStoredUserWhoseAckWasLost: a user whose insert
// committed but whose ack was lost with its connection (a close from
// outside, as the fault suite makes) comes back, fails on the duplicate
// and ends parked with its row stored. The row check names that user in a
// phase line and passes; a row no delivery inserted still fails it.
func TestRowsMatchNamesAStoredUserWhoseAckWasLost(t *testing.T) {
	ctx := t.Context()
	db := store.NewMemory()
	rec := &labtest.Recorder{}
	stream := lab.NewStream("Q24", lab.InMem, lab.NewClock(1), rec)
	r := &run{env: &lesson.Env{Stream: stream}, db: runstore.Opened{Store: db},
		ends: map[string]flow.Decision{}, offsets: map[string]int{}}
	require.NoError(t, db.InsertUsers(ctx, []store.User{userOf("a01")}))
	r.rows = []attemptRow{{task: "a01", insert: true},
		{task: "a01", retries: 1, insert: true, err: store.ErrDuplicate}}
	r.ends["a01"] = flow.Park(raffle.DLQ, "x-retries 2")
	require.NoError(t, r.rowsMatch(ctx))
	phases := labtest.OfKind(rec.Events(), lab.Phase)
	require.Len(t, phases, 1)
	assert.Contains(t, phases[0].Note, "stored but not acked: a01.")

	require.NoError(t, db.InsertUsers(ctx, []store.User{userOf("z99")})) // no delivery inserted it
	assert.ErrorContains(t, r.rowsMatch(ctx), "holds 2 rows, the consumers acked 0 inserts")
}

// TestLatelySavedIsOnlyWhatLatenessDecided: a user of an outage longer
// than the retries reach counts as saved by lateness only when its last
// delivery ended after its outage did (the DB is read between its start
// and its end); an outage the arithmetic outlasts, or a delivery inside
// the outage, does not count.
func TestLatelySavedIsOnlyWhatLatenessDecided(t *testing.T) {
	delivery := func(task string, began, ended int64, kind lab.Kind) []lab.Event {
		return []lab.Event{{Kind: lab.Started, Task: task, TMs: began}, {Kind: kind, Task: task, TMs: ended}}
	}
	const start = 1000 // part (a)'s first delivery, in lesson ms
	var events []lab.Event
	for _, d := range [][]lab.Event{
		delivery("a05-1", start, start+50, lab.Succeeded),
		delivery("b-attempt", start+40000, start+50000, lab.Succeeded), // another part's task
		delivery("a15-1", start+20400, start+20450, lab.Succeeded),     // saved by the arithmetic
		delivery("a30-1", start+20400, start+20450, lab.Failed),        // inside its outage: parked
		delivery("a30-2", start+29960, start+30010, lab.Succeeded),     // its insert, 50 ms on, after 30 s
		delivery("a45-2", start+43000, start+45600, lab.Succeeded),     // began inside, its insert late
		delivery("a45-1", start+44000, start+44050, lab.Failed),        // still inside its outage
	} {
		events = append(events, d...)
	}
	assert.Equal(t, []string{"a30-2", "a45-2"}, LatelySaved(events))
	inside := slices.DeleteFunc(slices.Clone(events), func(e lab.Event) bool {
		return e.Task == "a30-2" || e.Task == "a45-2"
	})
	assert.Empty(t, LatelySaved(inside), "no delivery ended after an outage the retries cannot reach")
}
