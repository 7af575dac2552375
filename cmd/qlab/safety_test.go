package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lessons/q10"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// privatePrefix is a --prefix no other run uses, with an outsider's
// channel on the test broker; queues named under it that still exist when
// the test ends are deleted (only this test's names).
func privatePrefix(t *testing.T) (string, *amqp.Channel) {
	t.Helper()
	conn, err := amqp.Dial(rabbittest.NeedBroker(t))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	prefix := strings.TrimPrefix(rabbit.RunNames().Run, "qlab-") + "-test"
	t.Cleanup(func() {
		ch, err := conn.Channel()
		if err != nil {
			return
		}
		for _, q := range q10.Lesson.Topologies()[0].Queues {
			_, _ = ch.QueueDelete(prefix+"."+q.Name, false, false, false)
		}
	})
	return prefix, ch
}

// queueExists asks the broker on a channel of its own (a 404 closes it).
func queueExists(t *testing.T, name string) bool {
	t.Helper()
	return onNewChannel(t, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
		return err
	}) == nil
}

// onNewChannel runs f on a connection of its own to the test broker (a
// passive declare of a missing name closes its channel and connection).
func onNewChannel(t *testing.T, f func(*amqp.Channel) error) error {
	t.Helper()
	conn, err := amqp.Dial(rabbittest.NeedBroker(t))
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	return f(ch)
}

// TestSeedNamesRefuseSomeoneElsesQueue: with --names exact, a lesson queue
// that already exists (someone else's, holding a message) stops the run
// before it declares anything; the message stays where it was.
func TestSeedNamesRefuseSomeoneElsesQueue(t *testing.T) {
	prefix, other := privatePrefix(t)
	theirs := prefix + "." + "sequential.dlq"
	_, err := other.QueueDeclare(theirs, true, false, false, false, nil)
	require.NoError(t, err)
	require.NoError(t, other.PublishWithContext(t.Context(), "", theirs, false, false, amqp.Publishing{Body: []byte("theirs")}))

	code, out, errOut := qlab("run", "10", "--backend", "rabbit", "--names", "exact", "--prefix", prefix, "--speed", "20")
	assert.Equal(t, exitError, code)
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	assert.Contains(t, errOut, "queue "+theirs+" already exists")
	assert.Contains(t, errOut, "rabbitmqctl delete_queue "+theirs)
	assert.NotContains(t, out, "Done:", "nothing ran")
	q, err := other.QueueDeclarePassive(theirs, true, false, false, false, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, q.Messages, "their message is still there")
	assert.False(t, queueExists(t, prefix+"."+"sequential.queue"), "the refused run declared nothing")
}

// TestSeedNamesUnderAPrefix: --names exact --prefix NAME runs on
// NAME.sequential.queue … and deletes them at the end.
func TestSeedNamesUnderAPrefix(t *testing.T) {
	prefix, _ := privatePrefix(t)
	code, out, errOut := qlab("run", "10", "--backend", "rabbit", "--names", "exact", "--prefix", prefix, "--speed", "20", "--no-color")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "(each name starts with "+prefix+".)", "the queues table names the prefix once")
	assert.Contains(t, out, "sequential.retry.wait")
	assert.False(t, queueExists(t, prefix+"."+"sequential.queue"), "deleted at the end")
}

// lineWriter hands each complete line to f, as a pipe reader would.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	all  bytes.Buffer
	line func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(p)
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(string(w.buf.Next(i + 1)))
	}
}

// TestDeletedWaitQueueEndsTheRun deletes the run's first wait queue from
// outside while C waits in it: the run ends within its bound with one
// error and exit 1, and C is reported lost with the reason.
func TestDeletedWaitQueueEndsTheRun(t *testing.T) {
	prefix, other := privatePrefix(t)
	wait := prefix + "." + "sequential.retry.wait"
	out := &lineWriter{line: func(line string) {
		var e lab.Event
		if json.Unmarshal([]byte(line), &e) == nil && e.Kind == lab.Scheduled && e.Task == "C" && e.Via == "sequential.retry.wait" {
			_, err := other.QueueDelete(wait, false, false, false)
			assert.NoError(t, err)
		}
	}}
	var errOut bytes.Buffer
	start := time.Now()
	code := Main(t.Context(), []string{"run", "10", "--backend", "rabbit", "--names", "exact", "--prefix", prefix, "--speed", "20", "--json"}, out, &errOut)
	assert.Equal(t, exitError, code)
	assert.Less(t, time.Since(start), 15*time.Second, "ends within the bound")
	assert.Contains(t, errOut.String(), "queue "+wait+" was deleted")
	assert.Equal(t, 1, strings.Count(errOut.String(), "qlab: "), errOut.String())
	assert.Contains(t, errOut.String(), "lesson 10 lost", "the one line names the lost tasks")
	var c lab.Event
	sc := bufio.NewScanner(&out.all)
	for sc.Scan() {
		var e lab.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		if e.Kind == lab.Summary && e.Task == "C" {
			c = e
		}
		if e.Kind == lab.Lost && e.Task == "C" {
			assert.Contains(t, e.Note, wait+" was deleted")
		}
	}
	assert.Equal(t, lab.FateLost, c.Fate)
	assert.False(t, queueExists(t, prefix+"."+"sequential.queue"), "the run deleted what it created")
}

// scratch is the temporary directories this test process made (its
// config, the built binary's): TestMain removes them when the tests end,
// and at once on SIGINT or SIGTERM, which end the process before that.
var scratch struct {
	sync.Mutex
	dirs []string
}

// keepScratch adds dir to what the process removes when it ends.
func keepScratch(dir string) {
	scratch.Lock()
	defer scratch.Unlock()
	scratch.dirs = append(scratch.dirs, dir)
}

// removeScratch removes the process's temporary directories.
func removeScratch() {
	scratch.Lock()
	defer scratch.Unlock()
	for _, d := range scratch.dirs {
		os.RemoveAll(d)
	}
	scratch.dirs = nil
}

// qlabBuild is the one build of the qlab binary this test run makes (a
// link takes seconds, many on a busy machine): by make build where make
// is, which the Makefile's tests check (what it said on stderr), else by
// go build. make's later builds to the same file find it up to date.
type qlabBuild struct {
	bin, stderr string
	viaMake     bool
}

var buildOnce = sync.OnceValues(func() (qlabBuild, error) {
	dir, err := os.MkdirTemp("", "qlab-bin-")
	if err != nil {
		return qlabBuild{}, err
	}
	keepScratch(dir)
	b := qlabBuild{bin: filepath.Join(dir, "qlab")}
	cmd := exec.Command("go", "build", "-o", b.bin, ".")
	if _, err := exec.LookPath("make"); err == nil {
		b.viaMake = true
		cmd = exec.Command("make", "-s", "-C", "../..", "QLAB="+b.bin, "build")
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return qlabBuild{}, fmt.Errorf("%s: %v\n%s%s", strings.Join(cmd.Args, " "), err, out.String(), errOut.String())
	}
	b.stderr = errOut.String()
	return b, nil
})

// buildQlab builds the binary once per test run.
func buildQlab() (string, error) {
	b, err := buildOnce()
	return b.bin, err
}

// closeStdoutEarly runs the built qlab with args, reads one line of its
// stdout through a real pipe and closes the pipe, as `| head -1` does.
func closeStdoutEarly(t *testing.T, args ...string) (code int, stderr string, took time.Duration) {
	t.Helper()
	if testing.Short() {
		t.Skip("links the qlab binary: not in -short")
	}
	bin, err := buildQlab()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, cmd.Start())
	first, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	assert.True(t, json.Valid([]byte(first)), first)
	require.NoError(t, stdout.Close())
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "qlab must exit non-zero, not be killed: %v", err)
	require.True(t, exit.Exited(), "killed by a signal: %v", err)
	return exit.ExitCode(), errOut.String(), time.Since(start)
}

func TestClosedStdoutEndsAnInMemoryRun(t *testing.T) {
	t.Parallel() // a process of its own: beside the tests that wait
	code, stderr, _ := closeStdoutEarly(t, "run", "7", "--json")
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "output closed")
}

// TestClosedStdoutCleansUp: `qlab run 10 --backend rabbit --json | head -1`
// stops the run, deletes its queues and exits 1.
func TestClosedStdoutCleansUp(t *testing.T) {
	t.Parallel() // a process of its own: beside the tests that wait
	prefix, _ := privatePrefix(t)
	code, stderr, _ := closeStdoutEarly(t, "run", "10", "--backend", "rabbit", "--names", "exact", "--prefix", prefix, "--speed", "5", "--json")
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "output closed")
	for _, q := range q10.Lesson.Topologies()[0].Queues {
		assert.False(t, queueExists(t, prefix+"."+q.Name), "left behind: %s", q.Name)
	}
}

// testConfigEnv holds the config directory a test process made, for the
// copies of the test binary that its tests run.
const testConfigEnv = "QLAB_TEST_CONFIG_DIR"

func TestMain(m *testing.M) {
	labtest.RemoveOnSignal(removeScratch)
	// Never the developer's own class: a test that joins sets its own. A
	// copy of this binary that a test runs (and may kill) uses its
	// parent's directory, which the parent removes.
	cfg := os.Getenv(testConfigEnv)
	if cfg == "" || cfg != os.Getenv("QLAB_CONFIG_DIR") {
		var err error
		if cfg, err = os.MkdirTemp("", "qlab-config-"); err != nil {
			panic(err)
		}
		keepScratch(cfg)
		os.Setenv(testConfigEnv, cfg)
	}
	os.Setenv("QLAB_CONFIG_DIR", cfg)
	// The link takes seconds (a minute at a load of 40, measured): start it
	// now, beside the in-process tests, for the tests that run the binary,
	// unless -short skips them, -run picks a few tests or -list runs none.
	flag.Parse()
	prebuild := !testing.Short() && flag.Lookup("test.run").Value.String() == "" &&
		flag.Lookup("test.list").Value.String() == ""
	if prebuild {
		go buildOnce() // its tests read the error
	}
	code := m.Run()
	if prebuild {
		_, _ = buildOnce() // a build still going ends before its directory goes
	}
	removeScratch()
	os.Exit(code)
}

// TestSpeedTooFastForTheBrokersTTL: at --speed 500, lesson 10's 1 s wait
// would be 2 ms on the broker: refused as a usage error before anything
// is declared.
func TestSpeedTooFastForTheBrokersTTL(t *testing.T) {
	rabbittest.NeedBroker(t)
	code, _, errOut := qlab("run", "10", "--backend", "rabbit", "--speed", "500")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--speed 500 is too fast for the broker: sequential.retry.wait's TTL of 1s (lesson time) would be 2ms real")
	assert.Contains(t, errOut, "use --speed 200 or less")
}
