package run_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/run"
)

func find(t *testing.T, n int) lesson.Lesson {
	l, ok := lessons.Find(n)
	require.True(t, ok)
	return l
}

// A request the lesson cannot run is the caller's mistake, said plainly.
func TestCheckRefusesWhatCannotRun(t *testing.T) {
	cases := map[string]run.Request{
		"lesson 1 has no rabbit variant":        {Lesson: find(t, 1), Options: lesson.Options{Backend: lab.Rabbit}},
		"--names must be run or exact":          {Lesson: find(t, 10), Naming: "seeds"},
		"--prefix goes with --names exact":      {Lesson: find(t, 10), Prefix: "alice"},
		"--prefix":                              {Lesson: find(t, 10), Naming: run.Exact, Prefix: "a b"},
		"lesson 11 has no inmem variant (it ru": {Lesson: find(t, 11), Options: lesson.Options{Backend: lab.InMem}},
	}
	for want, req := range cases {
		_, err := run.Check(req)
		require.ErrorIs(t, err, run.ErrInvalid, want)
		assert.Contains(t, err.Error(), want)
		assert.NotContains(t, err.Error(), run.ErrInvalid.Error(), "the message says what is wrong, nothing more")
	}
	var nb lesson.ErrNoBackend
	_, err := run.Check(cases["lesson 1 has no rabbit variant"])
	assert.True(t, errors.As(err, &nb), "the lesson's own error is still there")

	req, err := run.Check(run.Request{Lesson: find(t, 11), Naming: "seed"})
	require.NoError(t, err)
	assert.Equal(t, run.Exact, req.Naming, "the old spelling")
	assert.Equal(t, lab.Rabbit, req.Options.Backend, "the lesson's default backend")
}

// Names: a private prefix per run, the seed's own, or the seed's under a
// person's prefix; the note names the prefix to clean up.
func TestNamesAndPrefixNote(t *testing.T) {
	a, b := run.NamesFor(run.PerRun, ""), run.NamesFor(run.PerRun, "")
	assert.NotEqual(t, a.Prefix, b.Prefix, "runs never collide")
	assert.Empty(t, run.NamesFor(run.Exact, "").Prefix, "the seed's own names")
	alice := run.NamesFor(run.Exact, "alice")
	assert.Equal(t, "alice.", alice.Prefix)
	ln := lesson.Names(alice)
	note := run.Ready{Options: lesson.Options{Names: &ln}}.PrefixNote()
	assert.Contains(t, note, "qlab broker clean --prefix alice")
	assert.Empty(t, run.Ready{}.PrefixNote())
}

// An in-memory run needs no broker: Prepare finds none, Start runs the
// lesson and every task ends with a summary.
func TestPrepareAndStartInMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ready, err := run.Prepare(t.Context(), run.Request{Lesson: find(t, 7),
			Discover: rabbit.DiscoverOptions{DefaultURL: "amqp://guest:guest@127.0.0.1:1/"}})
		require.NoError(t, err)
		assert.Equal(t, lab.InMem, ready.Options.Backend)
		assert.Nil(t, ready.Options.Names, "no broker, no names")
		rec := &labtest.Recorder{}
		res, err := ready.Start(t.Context(), rec)
		require.NoError(t, err)
		assert.NotEmpty(t, res.Tasks)
		labtest.AssertAccounted(t, rec.Events())
	})
}

// A broker run with no broker to be found fails in Prepare, before
// anything starts, with the broker package's own error.
func TestPrepareWithoutABroker(t *testing.T) {
	t.Setenv(rabbit.EnvURL, "")
	_, err := run.Prepare(t.Context(), run.Request{Lesson: find(t, 10), Options: lesson.Options{Backend: lab.Rabbit},
		Discover: rabbit.DiscoverOptions{DefaultURL: "amqp://guest:guest@127.0.0.1:1/"}})
	require.ErrorIs(t, err, rabbit.ErrNoBroker)
	assert.NotErrorIs(t, err, run.ErrInvalid)
}

// TestPrepareClusterLessonWithoutACluster: a lesson that stops nodes of
// a cluster (Q21) is never handed the single broker, not even one a
// front end found (the TUI passes its discovery's URL): with no cluster
// recorded, Prepare fails at once with ErrNoCluster and how to start one.
func TestPrepareClusterLessonWithoutACluster(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv(rabbit.EnvURL, "")
	for _, broker := range []string{"", rabbit.DefaultURL} {
		_, err := run.Prepare(t.Context(), run.Request{Lesson: find(t, 21),
			Options: lesson.Options{Backend: lab.Rabbit, Broker: broker}})
		require.ErrorIs(t, err, run.ErrNoCluster, broker)
		assert.Contains(t, err.Error(), "start one with: qlab broker cluster up")
	}
}

// TestPrepareClusterLessonOnARecordedCluster: a recorded cluster whose
// nodes do not run is no cluster to run on (ErrNoCluster, and how to
// revive it); a RABBITMQ_URL that names another broker is refused,
// its password hidden.
func TestPrepareClusterLessonOnARecordedCluster(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	state := `{"kind":"local","id":"qlab-1-abcd","dir":"/tmp/qlab-1-abcd","nodes":[
{"short":"n1","name":"qlab-1-abcd-n1@localhost","port":1,"dir":"/tmp/qlab-1-abcd/n1"},
{"short":"n2","name":"qlab-1-abcd-n2@localhost","port":2,"dir":"/tmp/qlab-1-abcd/n2"}]}`
	require.NoError(t, os.MkdirAll(filepath.Join(cache, "qlab"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cache, "qlab", "cluster.json"), []byte(state), 0o600))
	req := run.Request{Lesson: find(t, 21), Options: lesson.Options{Backend: lab.Rabbit}}

	t.Setenv(rabbit.EnvURL, "")
	_, err := run.Prepare(t.Context(), req)
	require.ErrorIs(t, err, run.ErrNoCluster)
	assert.Contains(t, err.Error(), "node n1 of the recorded cluster is down; qlab broker cluster revive n1")

	t.Setenv(rabbit.EnvURL, "amqp://guest:secret@127.0.0.1:5672/")
	_, err = run.Prepare(t.Context(), req)
	require.ErrorIs(t, err, run.ErrInvalid, "a usage error: the single broker cannot run lesson 21")
	assert.Contains(t, err.Error(), "RABBITMQ_URL names amqp://guest:xxxxx@127.0.0.1:5672/")
	assert.NotContains(t, err.Error(), "secret")
}

// crashing is lesson 10 whose in-memory process dies 2 s (lesson time)
// into its run although nobody asked for it: the tasks memory held are
// lost, as an unplanned crash would lose them.
func crashing(t *testing.T) lesson.Lesson {
	l := find(t, 10)
	inner := l.InMem
	l.InMem = func(ctx context.Context, env *lesson.Env) error {
		env.Interrupt = 2 * time.Second
		return inner(ctx, env)
	}
	return l
}

// A run that lost tasks its lesson does not lose on purpose fails, and
// the error names each lost task and why it was lost.
func TestStartFailsARunThatLostTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ready, err := run.Prepare(t.Context(), run.Request{Lesson: crashing(t), Options: lesson.Options{Backend: lab.InMem}})
		require.NoError(t, err)
		res, err := ready.Start(t.Context())
		var lost *lesson.LostError
		require.ErrorAs(t, err, &lost)
		require.NotEmpty(t, lost.Tasks)
		for _, task := range lost.Tasks {
			assert.Equal(t, lab.FateLost, task.Fate)
			assert.Contains(t, err.Error(), task.ID)
		}
		assert.Contains(t, err.Error(), "process died")
		assert.NotContains(t, err.Error(), "\n", "one line")
		assert.Len(t, lost.Tasks, countLost(res.Tasks), "every lost task, none twice")
	})
}

// A crash the caller asked for (qlab compare's persistence run) loses
// what memory held by design: no failure. Nor is a loss the lesson
// declares (Q18's stuck row).
func TestStartAcceptsLossesOnPurpose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := lesson.Options{Backend: lab.InMem, Interrupt: 2 * time.Second}
		ready, err := run.Prepare(t.Context(), run.Request{Lesson: find(t, 10), Options: opts})
		require.NoError(t, err)
		res, err := ready.Start(t.Context())
		require.True(t, res.Interrupted)
		require.NotZero(t, countLost(res.Tasks), "memory lost what it held")
		var lost *lesson.LostError
		assert.False(t, errors.As(err, &lost), "%v", err)
	})
	synctest.Test(t, func(t *testing.T) {
		l := find(t, 18)
		ready, err := run.Prepare(t.Context(), run.Request{Lesson: l, Options: lesson.Options{Backend: lab.InMem}})
		require.NoError(t, err)
		res, err := ready.Start(t.Context())
		require.NoError(t, err)
		assert.Equal(t, len(l.LosesOnPurpose), countLost(res.Tasks))
	})
}

func countLost(tasks []lab.TaskRecord) int {
	n := 0
	for _, task := range tasks {
		if task.Fate == lab.FateLost {
			n++
		}
	}
	return n
}
