package q20

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/sqlstore"
)

// runParts runs the crash under each policy on backend b, as the whole
// lesson would, and returns the events and what each part measured.
func runParts(t *testing.T, b lab.Backend, ps ...policy) ([]lab.Event, []outcome) {
	t.Helper()
	var out []outcome
	l := Lesson
	part := func(ctx context.Context, env *lesson.Env) error {
		for _, p := range ps {
			o, err := crash(ctx, ctx, env, p)
			if err != nil {
				return err
			}
			out = append(out, o)
		}
		return nil
	}
	l.InMem, l.Rabbit = part, part
	events, _ := lessontest.On(t, b, l, lesson.Options{})
	labtest.AssertAccounted(t, events)
	return events, out
}

// assertGone fails unless process pid no longer exists: signal 0 (does
// it exist?) finds no such process.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	require.NotZero(t, pid)
	p, err := os.FindProcess(pid)
	if err != nil {
		return // Windows: no process with that id
	}
	err = p.Signal(syscall.Signal(0))
	gone := errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
	assert.True(t, gone, "process %d is gone (signal 0: %v)", pid, err)
}

// TestSIGKILLRedeliversAndTheStoreAbsorbs: the worker process is killed
// with SIGKILL holding five unacked messages; the broker redelivers all
// five to the survivor with redelivered set; the two already SENT are
// skipped (absorbed), nothing is lost, every row ends SENT in the store
// the two processes share, and the killed process is gone.
func TestSIGKILLRedeliversAndTheStoreAbsorbs(t *testing.T) {
	events, out := runParts(t, lab.Rabbit, resend)
	o := out[0]
	assert.Equal(t, "signal: killed", o.exit)
	assertGone(t, o.pid)
	redelivered := map[string]bool{}
	for _, e := range labtest.OfKind(events, lab.Redelivered) {
		redelivered[e.Task] = true
		assert.Equal(t, Survivor, e.Actor)
	}
	for _, id := range o.ids() {
		assert.True(t, redelivered[id], "%s redelivered", id)
		assert.True(t, o.redelivered[id], "%s carried the redelivered flag", id)
		assert.Equal(t, store.Sent, o.status[id], id)
	}
	assert.Equal(t, "skipped SENT", o.did["R1"])
	assert.Equal(t, "skipped SENT", o.did["R2"])
	assert.Equal(t, map[string]int{"R1": 1, "R2": 1, "R3": 2, "R4": 1, "R5": 1}, o.sends)
	assert.Equal(t, 5, o.kept)
	for id, r := range labtest.Fates(events) {
		assert.Equal(t, lab.FateDone, r.Fate, id)
	}
	kill := assertKillIsAnEvent(t, events, "SIGKILL: "+Crashing+", process "+strconv.Itoa(o.pid))
	assert.Contains(t, events[kill].Note, "holding R1–R5 unacked")
	for _, e := range events[:kill] {
		assert.NotEqual(t, lab.Redelivered, e.Kind, "%s redelivered before the kill", e.Task)
	}
}

// assertKillIsAnEvent finds the phase that marks the kill (its note
// begins with title), once, after everything the crashing worker did,
// and returns its index in events.
func assertKillIsAnEvent(t *testing.T, events []lab.Event, title string) int {
	t.Helper()
	at := -1
	for i, e := range events {
		if e.Kind == lab.Phase && strings.HasPrefix(e.Note, title) {
			require.Equal(t, -1, at, "one kill, one phase: %q", e.Note)
			at = i
		}
	}
	require.NotEqual(t, -1, at, "no phase in the stream begins %q", title)
	for _, e := range events[at:] {
		if strings.HasPrefix(e.Actor, Crashing) {
			assert.Contains(t, []lab.Kind{lab.Lost, lab.Summary}, e.Kind,
				"after the kill %s did %s %s", e.Actor, e.Kind, e.Task)
		}
	}
	return at
}

// TestSendingWindow: a row left SENDING by the killed worker. Resending
// it sends R3 (sent before the kill) twice and R4 once; skipping it sends
// S3 once but never S4, which ends lost with its row SENDING.
func TestSendingWindow(t *testing.T) {
	events, out := runParts(t, lab.Rabbit, resend, skip)
	re, sk := out[0], out[1]
	assert.Equal(t, 2, re.sends["R3"], "sent before the kill and again by the survivor")
	assert.Equal(t, 1, re.sends["R4"], "claimed, never sent: the survivor sends it")
	assert.Equal(t, "took SENDING over, sent", re.did["R3"])

	assert.Equal(t, 1, sk.sends["S3"])
	assert.Zero(t, sk.sends["S4"], "skipped as if sent")
	assert.Equal(t, store.Sending, sk.status["S4"])
	assert.Equal(t, store.Sending, sk.status["S3"])
	fates := labtest.Fates(events)
	assert.Equal(t, lab.FateLost, fates["S4"].Fate)
	assert.Equal(t, lab.FateDone, fates["S3"].Fate)
	assertGone(t, re.pid)
	assertGone(t, sk.pid)
}

// TestCrashInMemoryLosesWhatItHeld: in memory the crash takes the queue,
// the worker and the map store: nothing is redelivered, no row is kept,
// the messages not sent (R4, R5) are lost, the sent ones sent once.
func TestCrashInMemoryLosesWhatItHeld(t *testing.T) {
	events, out := runParts(t, lab.InMem, resend)
	o := out[0]
	assert.Empty(t, labtest.OfKind(events, lab.Redelivered))
	assert.Zero(t, o.kept)
	assert.Zero(t, o.pid, "no process of its own in memory")
	assert.Equal(t, map[string]int{"R1": 1, "R2": 1, "R3": 1}, o.sends)
	fates := labtest.Fates(events)
	for _, id := range []string{"R1", "R2", "R3"} {
		assert.Equal(t, lab.FateDone, fates[id].Fate, id)
	}
	for _, id := range []string{"R4", "R5"} {
		assert.Equal(t, lab.FateLost, fates[id].Fate, id)
	}
	kill := assertKillIsAnEvent(t, events, "The crash: this process dies while "+Crashing+" holds R1–R5")
	for _, e := range events[:kill] {
		assert.NotEqual(t, lab.Lost, e.Kind, "%s lost before the crash", e.Task)
	}
}

// TestWorkerDiesWithTheLesson: a worker process whose lesson goes away
// (its stdin closes, as when the lesson is killed itself) exits on its
// own within the bound, so it is never left behind.
func TestWorkerDiesWithTheLesson(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	names := rabbit.RunNames()
	declareQueue(t, url, names.Of(birthday.Queue))
	p, err := startWorker(workerConfig{AMQP: url, Names: names,
		Store: sqlstore.Config{Dir: t.TempDir()}, Prefetch: Prefetch, Steps: map[string]step{},
		Speed: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.kill() })
	select {
	case line := <-p.lines:
		require.Equal(t, sayHolding+" ", line)
	case <-time.After(holdBound):
		t.Fatal("the worker never started")
	}
	require.NoError(t, p.stdin.Close()) // the lesson is gone
	select {
	case <-p.exited:
	case <-time.After(killBound):
		t.Fatalf("the worker outlived its lesson by %s", killBound)
	}
	assert.Equal(t, "exit status 0", p.exit())
	assertGone(t, p.Pid())
}

// TestLessonAccountsForEveryTask: the whole lesson in memory, one summary
// per task, both tables, the notice's ids the code's.
func TestLessonAccountsForEveryTask(t *testing.T) {
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{})
	labtest.AssertAccounted(t, events)
	assert.Len(t, res.Tasks, 2*len(script))
	assert.Len(t, res.Tables, 2)
	assert.Equal(t, []string{"R1", "R2", "R3", "R4", "R5"}, resend.ids())
	assert.Equal(t, sent, script[2], "R3: sent, still SENDING, as the notice says")
	assert.Equal(t, claimed, script[3], "S4: claimed, not sent")
}

// declareQueue declares queue name on the broker at url for the test, and
// deletes it when the test ends.
func declareQueue(t *testing.T, url, name string) {
	t.Helper()
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDeclare(name, false /* durable */, false /* autoDelete */, false, /* exclusive */
		false /* noWait */, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = ch.QueueDelete(name, false, false, false) })
}

// cancelOnWorker cancels the run at the first event of the worker
// process, and keeps its pid.
type cancelOnWorker struct {
	cancel func()
	pid    atomic.Int64
}

func (c *cancelOnWorker) Inline() {}

func (c *cancelOnWorker) Emit(e lab.Event) {
	rest, ok := strings.CutPrefix(e.Actor, Crashing+" pid ")
	if !ok || c.pid.Load() != 0 {
		return
	}
	pid, _ := strconv.Atoi(rest)
	c.pid.Store(int64(pid))
	c.cancel()
}

// TestCancelledRunLeavesNoWorker: a run cancelled while its worker
// process works (Ctrl-C) kills that process and waits for it, and
// deletes its queues.
func TestCancelledRunLeavesNoWorker(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	names := rabbit.RunNames()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sink := &cancelOnWorker{cancel: cancel}
	_, err := lesson.Run(ctx, Lesson, lesson.Options{Backend: lab.Rabbit, Broker: url,
		Speed: Lesson.TestSpeed, Names: rabbitenv.Of(names)}, sink)
	require.ErrorIs(t, err, context.Canceled)
	assertGone(t, int(sink.pid.Load()))
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDeclarePassive(names.Of(birthday.Queue), false, false, false, false, nil)
	assert.Error(t, err, "the run's queue is deleted (404 on a passive declare)")
}
