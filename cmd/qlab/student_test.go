package main

import (
	"fmt"
	"log/slog"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/render"
)

// TestRunHelpStatesEachLessonsDefaultBackend: --backend has no single
// default; the help names the lessons that run on the broker unless told.
func TestRunHelpStatesEachLessonsDefaultBackend(t *testing.T) {
	code, out, _ := qlab("run", "--help")
	require.Equal(t, exitOK, code)
	out = strings.Join(strings.Fields(out), " ") // the help wraps
	assert.Contains(t, out, "rabbit for lessons 10, 11, 14–22, 25, inmem for the others")
	assert.NotContains(t, out, "(default inmem)")
	assert.Contains(t, out, "2× for 12, 5× for 13")
}

// TestNoBrokerSuggestsTheInMemoryRun: lessons 10 and 14 default to the
// broker; without one they exit 1 and name the command that runs them in
// memory. Lesson 11 has no in-memory run to suggest.
func TestNoBrokerSuggestsTheInMemoryRun(t *testing.T) {
	t.Setenv("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:1/") // a closed port
	for _, n := range []string{"10", "14"} {
		code, _, errOut := qlab("run", n)
		assert.Equal(t, exitError, code, errOut)
		assert.Contains(t, errOut, "no RabbitMQ broker found")
		assert.Contains(t, errOut, "run "+n+" --backend inmem", "lesson %s", n)
	}
	code, _, errOut := qlab("run", "11")
	assert.Equal(t, exitError, code)
	assert.NotContains(t, errOut, "--backend inmem")
}

// TestLongLessonsGoAtTheirOwnSpeed: without --speed, Q12 (a 30 s outage)
// runs at its own pace; --speed wins when given.
func TestLongLessonsGoAtTheirOwnSpeed(t *testing.T) {
	for args, speed := range map[string]string{
		"13 --backend inmem":             "(inmem, speed 5×)",
		"13 --backend inmem --speed 0.5": "(inmem, speed 0.5×)",
		"14 --backend inmem":             "(inmem, speed 100×)", // the seed's minutes (issue 20)
		"1":                              "(inmem, speed 1×)",
	} {
		synctest.Test(t, func(t *testing.T) {
			code, out, errOut := qlab(append([]string{"run", "--no-color"}, strings.Fields(args)...)...)
			require.Equal(t, exitOK, code, errOut)
			assert.Contains(t, strings.Join(strings.Fields(out), " "), speed, args)
		})
	}
}

// TestHelpListsEveryCommand: qlab help names broker clean and version.
func TestHelpListsEveryCommand(t *testing.T) {
	code, out, _ := qlab("help")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "status|up|down|latency|clean")
	assert.Contains(t, out, "qlab version")
	for name := range commands {
		assert.Contains(t, out, "qlab "+name, "qlab help leaves out %s", name)
	}
}

// TestVersion: qlab version says which build this is: the commit where
// the build recorded one, and says when it did not.
func TestVersion(t *testing.T) {
	code, out, _ := qlab("version")
	require.Equal(t, exitOK, code)
	assert.True(t, strings.HasPrefix(out, "qlab "), out)
	assert.Contains(t, out, "go1.")
	code, out2, _ := qlab("--version")
	assert.Equal(t, exitOK, code)
	assert.Equal(t, out, out2)

	info := &debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "54bdcc3f00d1a2b3c4d5e6f708192a3b4c5d6e7f"}, {Key: "vcs.modified", Value: "true"},
		{Key: "vcs.time", Value: "2026-11-24T10:00:00Z"}, {Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"},
	}}
	assert.Equal(t, "qlab v0.3.0, commit 54bdcc3f00d1 with uncommitted changes, 2026-11-24T10:00:00Z, go1.25.0 linux/amd64", versionLine(info))
	info.Settings = nil
	assert.Contains(t, versionLine(info), "commit unknown")
}

// TestRunOutputFitsTheScreen: everything qlab run prints where stdout is
// no terminal fits 100 columns, the notes on a broker run's queues and
// the Next: lines included: every lesson in memory (in a synctest
// bubble), and a --keep run on the broker.
func TestRunOutputFitsTheScreen(t *testing.T) {
	t.Parallel() // its broker run waits: beside the other tests that wait
	fits := func(t *testing.T, out string) {
		t.Helper()
		for _, line := range strings.Split(out, "\n") {
			assert.LessOrEqual(t, render.Width(line), render.MaxWidth, "too wide:\n%s", line)
		}
	}
	for _, l := range lessons.All {
		if l.InMem == nil {
			continue
		}
		synctest.Test(t, func(t *testing.T) {
			code, out, errOut := qlab("run", fmt.Sprint(l.Number()), "--backend", "inmem", "--no-color")
			require.Equal(t, exitOK, code, errOut)
			fits(t, out)
		})
	}
	rabbittest.NeedBroker(t)
	code, out, errOut := qlab("run", "10", "--keep", "--speed", "4", "--no-color")
	require.Equal(t, exitOK, code, errOut)
	prefix := regexp.MustCompile(`under the prefix\s+(qlab-[0-9a-f]+)`).FindStringSubmatch(out)
	require.NotNil(t, prefix, out)
	t.Cleanup(func() { qlab("broker", "clean", "--prefix", prefix[1]) })
	fits(t, out)
	assert.Contains(t, out, "Kept:")
}

// TestHelpFitsTheScreen: every command's --help, and qlab help, fit 100
// columns (a flag's help wraps under its name).
func TestHelpFitsTheScreen(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"list", "--help"}, {"run", "--help"}, {"tui", "--help"}, {"compare", "--help"},
		{"broker", "--help"}, {"ex", "--help"}, {"dlq", "--help"}, {"version", "--help"}} {
		code, out, _ := qlab(args...)
		require.Equal(t, exitOK, code, args)
		for _, line := range strings.Split(out, "\n") {
			assert.LessOrEqual(t, render.Width(line), render.MaxWidth, "qlab %v:\n%s", args, line)
		}
	}
	for name := range commands {
		code, _, _ := qlab(name, "--help")
		assert.Equal(t, exitOK, code, "qlab %s --help", name)
	}
}

// TestRunStderrFitsTheScreen: what a broker run reports beside its log
// (Q22 cuts its workers' connections on purpose, and says so on stderr)
// is a wrapped "qlab: " line, with no wall-clock stamp among the lesson's.
func TestRunStderrFitsTheScreen(t *testing.T) {
	t.Parallel() // waits on the broker: beside the other tests that wait
	rabbittest.NeedBroker(t)
	code, _, errOut := qlab("run", "22", "--backend", "rabbit", "--no-color")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, strings.Join(strings.Fields(errOut), " "), "qlab: rabbit: planned interruption: 2 consumer connections cut")
	assert.NotContains(t, errOut, "time=")
	for _, line := range strings.Split(errOut, "\n") {
		assert.LessOrEqual(t, render.Width(line), render.DefaultWidth, "too wide:\n%s", line)
	}
}

// TestProseLoggerWraps: a record is "qlab: ", a warning says so, its
// attributes follow as key=value (quoted when they hold a space), and the
// line wraps at 80 columns where the writer is no terminal.
func TestProseLoggerWraps(t *testing.T) {
	var b strings.Builder
	log := proseLogger(&b, slog.LevelInfo).With("actor", "Retry-Rabbit-Worker")
	log.Debug("not shown")
	log.Warn("rabbit: consumer connection lost; reconnecting", "queue", "qlab-1a2b3c.sequential.second.retry.processing", "err", "Exception (320) connection forced")
	assert.Equal(t, "qlab: warning: rabbit: consumer connection lost; reconnecting\n"+
		"      actor=Retry-Rabbit-Worker\n"+
		"      queue=qlab-1a2b3c.sequential.second.retry.processing err=\"Exception (320)\n"+
		"      connection forced\"\n", b.String())
}

// TestClusterLessonWithoutAClusterSaysHowToStartOne: lesson 21 stops a
// node of the cluster `qlab broker cluster up` records; with none
// recorded it says in one line how to start one and exits 2, at once,
// without trying the single broker; and it refuses a RABBITMQ_URL that is
// not that cluster's.
func TestClusterLessonWithoutAClusterSaysHowToStartOne(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // no state file: no cluster recorded
	t.Setenv("RABBITMQ_URL", "")
	for _, args := range [][]string{{"run", "21"}, {"run", "21", "--json"}} {
		begin := time.Now()
		code, out, errOut := qlab(args...)
		assert.Equal(t, exitUsage, code, args)
		assert.Empty(t, out, args)
		assert.Equal(t, "qlab: no cluster is up: lesson 21 runs on a three-node RabbitMQ cluster; "+
			"start one with: qlab broker cluster up\n", errOut, args)
		assert.Less(t, time.Since(begin), 5*time.Second, "no broker is tried, nothing waits")
	}
}
