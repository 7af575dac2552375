package q21

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/rabbit/cluster"
	"github.com/queuelab/qlab/rabbit/cluster/clustertest"
	"github.com/queuelab/qlab/render"
)

// The key tests run part 1 only (the failover, where the keys act): the
// later parts take no keys and TestQ21OnACluster covers them.

// student plays the TUI: it watches the stream and presses keys when
// enough messages are SENT, collecting the lesson's answers.
type student struct {
	act   chan lesson.Act
	pause lab.Pause // the TUI's space: holds the workers' sends
	mu    sync.Mutex
	sent  int
	evs   []lab.Event
	said  []string    // the lesson's answers, in order
	log   labtest.Log // what the lesson logged, as the TUI's status line shows it
}

// noted reports whether a logged line contains sub.
func (s *student) noted(sub string) bool {
	for _, n := range s.log.Messages() {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

func newStudent() *student { return &student{act: make(chan lesson.Act)} }

// Emit counts the sends; it never blocks the lesson.
func (s *student) Emit(e lab.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, e)
	if e.Kind == lab.Succeeded {
		s.sent++
	}
}

// saw reports whether a phase starting with title came.
func (s *student) saw(title string) bool {
	for _, e := range s.events() {
		if e.Kind == lab.Phase && strings.HasPrefix(e.Note, title) {
			return true
		}
	}
	return false
}

func (s *student) events() []lab.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]lab.Event(nil), s.evs...)
}

// pressAfter waits until n messages are SENT, then presses key and waits
// for the lesson's answer (each wait bounded), which it returns.
func (s *student) pressAfter(ctx context.Context, t *testing.T, n int, key string) string {
	for {
		s.mu.Lock()
		sent := s.sent
		s.mu.Unlock()
		if sent >= n {
			break
		}
		select {
		case <-ctx.Done():
			t.Errorf("only %d messages sent before the test's bound", sent)
			return ""
		case <-time.After(20 * time.Millisecond):
		}
	}
	answer := make(chan string, 1)
	select {
	case s.act <- lesson.Act{Key: key, Answer: answer}:
	case <-time.After(5 * time.Second): // the TUI waits 2 s: the lesson reads keys all through part 1
		t.Errorf("the lesson did not take %s within 5 s", key)
		return ""
	}
	select {
	case line := <-answer:
		s.mu.Lock()
		s.said = append(s.said, key+": "+line)
		s.mu.Unlock()
		return line
	case <-time.After(5 * time.Second):
		t.Errorf("the lesson took %s and said nothing", key)
		return ""
	}
}

// failoverOnly is the lesson with part 1 only, on cluster c.
func failoverOnly(c *cluster.Cluster) lesson.Lesson {
	l := New(func(context.Context, *lesson.Env) (*cluster.Cluster, error) { return c, nil })
	l.Rabbit = func(ctx context.Context, env *lesson.Env) error {
		r := &runner{env: env, c: c, names: rabbitenv.Names(env), act: env.Act}
		defer r.cleanup(ctx)
		return r.failover(ctx)
	}
	return l
}

// keySpeed is the key tests' speed: they hold counts, answers and
// tables, no lesson-clock figure (TestQ21OnACluster holds the
// reconnect waits, at the TUI's speed), so amqp-connection-manager's
// 60 s waits take 7.5 s.
const keySpeed = 8

// runWith runs part 1 at keySpeed with s's keys and s.pause.
func runWith(ctx context.Context, c *cluster.Cluster, s *student) (lesson.Result, error) {
	return lesson.Run(ctx, failoverOnly(c), lesson.Options{Backend: lab.Rabbit, Broker: c.URLList(),
		Speed: keySpeed, Act: s.act, Pause: &s.pause, Logger: slog.New(&s.log)}, s)
}

// TestStudentPullsThePlug: with Options.Act the leader's node stops at the
// student's k (after 20 SENT, not the lesson's own 10), v revives it
// mid-run, and the counts stay whole: every message sent once.
func TestStudentPullsThePlug(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a three-node cluster and stops a node")
	}
	t.Parallel()
	c := clustertest.Get(t)
	Hold(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := newStudent()
	var keys sync.WaitGroup
	var said []string
	keys.Go(func() {
		said = append(said, s.pressAfter(ctx, t, 3, KeyRevive)) // v before any k: nothing to revive
		said = append(said, s.pressAfter(ctx, t, 20, KeyStop))
		said = append(said, s.pressAfter(ctx, t, 22, KeyStop)) // k twice
		// The student pauses, so that messages are left when the node has
		// stopped (stop_app can take longer than the rest of the batch on a
		// loaded machine), and presses v until the node has stopped.
		s.pause.Hold()
		defer s.pause.Release()
		for ctx.Err() == nil {
			line := s.pressAfter(ctx, t, 22, KeyRevive)
			if !strings.Contains(line, "v works once it has stopped") {
				said = append(said, line)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		for !s.saw("n1 revived") && !s.saw("n2 revived") && !s.saw("n3 revived") && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
	})
	res, err := runWith(ctx, c, s)
	keys.Wait()
	require.NoError(t, err)

	require.Len(t, said, 4, "one answer per key: %q", s.said)
	assert.Contains(t, said[0], "no node is stopped yet")
	assert.Contains(t, said[1], "stopping ")
	assert.Regexp(t, "stopped already|is stopping", said[2])
	assert.Contains(t, said[3], "reviving ")
	// What the TUI's status line shows after the answers, as it happens.
	for _, sub := range []string{" stopped (stop_app took ", " leads ", " reconnected: it consumes again, on ", " revived after "} {
		assert.True(t, s.noted(sub), "the lesson logged %q: %q", sub, s.log.Messages())
	}

	evs := s.events()
	sentBeforeStop, succeeded := -1, map[string]int{}
	for _, e := range evs {
		if e.Kind == lab.Phase && strings.HasPrefix(e.Note, "The leader's node stops") && sentBeforeStop < 0 {
			sentBeforeStop = len(succeeded)
		}
		if e.Kind == lab.Succeeded {
			succeeded[e.Task]++
		}
	}
	assert.GreaterOrEqual(t, sentBeforeStop, 20, "the node stopped at the student's k, not at %d SENT", KillAfter)
	fates := map[string]lab.Fate{}
	for _, task := range res.Tasks {
		fates[task.ID] = task.Fate
	}
	for i := 1; i <= Messages; i++ {
		id := fmt.Sprintf("M%02d", i)
		assert.Equal(t, lab.FateDone, fates[id], id)
		assert.Equal(t, 1, succeeded[id], "%s sent once", id)
	}
	assertAccounted(t, evs, res)

	f := table(t, res, "What happened: the leader's node stopped mid-run")
	before, after, ok := strings.Cut(cell(t, f, "leader before → after"), " → ")
	require.True(t, ok)
	assert.NotEqual(t, before, after, "the leader moved")
	assert.Contains(t, cell(t, f, "node revived after"), "(by v, mid-run)")
	w := table(t, res, "The workers: where they consumed, what the stop did to them")
	assert.Contains(t, w.Rows[0][2], before+" → ", "Worker-1 moved off the stopped node")
	assertClusterWhole(ctx, t, c)
}

// TestNoKeyNoStop: with Options.Act and no k before every message is
// sent, nothing stops, and the table says so rather than a failover.
func TestNoKeyNoStop(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a three-node cluster")
	}
	t.Parallel()
	c := clustertest.Get(t)
	Hold(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := newStudent()
	res, err := runWith(ctx, c, s)
	require.NoError(t, err)
	f := table(t, res, "What happened: the leader's node was not stopped")
	assert.Contains(t, cell(t, f, "leader"), "not stopped")
	assert.Equal(t, fmt.Sprintf("%d / 0 / 0 of %d", Messages, Messages), cell(t, f, "messages sent once / twice / never"))
	for _, e := range s.events() {
		assert.NotEqual(t, lab.Redelivered, e.Kind, "no node stopped, nothing redelivered: %v", e)
		assert.False(t, e.Kind == lab.Phase && strings.HasPrefix(e.Note, "The leader's node stops"))
	}
	assertAccounted(t, s.events(), res)
	assertClusterWhole(ctx, t, c)
}

// TestQuitMidStop: the TUI quits (ctx ends) right after the student's k,
// while the node stops: the run still ends with one summary per task,
// revives the node and deletes what it declared.
func TestQuitMidStop(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a three-node cluster and stops a node")
	}
	t.Parallel()
	c := clustertest.Get(t)
	Hold(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	runCtx, quit := context.WithCancel(ctx)
	s := newStudent()
	go func() {
		defer quit()
		s.pressAfter(ctx, t, 5, KeyStop)
		for !s.saw("The leader's node stops") && ctx.Err() == nil { // stop_app is under way
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
	}()
	res, err := runWith(runCtx, c, s)
	require.ErrorIs(t, err, context.Canceled)
	assertAccounted(t, s.events(), res)
	assertClusterWhole(ctx, t, c)
}

func assertAccounted(t *testing.T, evs []lab.Event, res lesson.Result) {
	t.Helper()
	summaries := 0
	for _, e := range evs {
		if e.Kind == lab.Summary {
			summaries++
		}
	}
	assert.Len(t, res.Tasks, Messages)
	assert.Equal(t, len(res.Tasks), summaries, "one summary per task")
}

// assertClusterWhole: every node runs again and no queue of the run is left.
func assertClusterWhole(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	t.Helper()
	for _, n := range c.Nodes {
		assert.Equal(t, cluster.Running, c.State(ctx, n), n.Short)
	}
	qs, err := c.Queues(ctx)
	require.NoError(t, err)
	for _, q := range qs {
		assert.NotContains(t, q.Name, ".birthday.messages", "left behind: %s", q.Name)
		assert.NotContains(t, q.Name, ".q21.", "left behind: %s", q.Name)
	}
}

func table(t *testing.T, res lesson.Result, title string) render.Table {
	t.Helper()
	for _, tb := range res.Tables {
		if tb.Title == title {
			return tb
		}
	}
	t.Fatalf("no table %q", title)
	return render.Table{}
}

func cell(t *testing.T, tb render.Table, measure string) string {
	t.Helper()
	for _, r := range tb.Rows {
		if r[0] == measure {
			return r[1]
		}
	}
	t.Fatalf("no row %q in %q", measure, tb.Title)
	return ""
}
