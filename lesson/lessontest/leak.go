package lessontest

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// runLabel is the pprof label that marks the goroutines of one checked
// run; lastRun numbers the runs.
const runLabel = "qlab-test-run"

var lastRun atomic.Int64

// leakBound is how long NoGoroutineOutlives waits for the run's
// goroutines to finish once it returned: amqp091-go's reader goroutines
// end when the broker has answered the close.
const leakBound = 10 * time.Second

// NoGoroutineOutlives runs run and fails t if, within leakBound after it
// returned, a goroutine it started (directly or through others: consumers,
// timers' waiters, amqp091-go's connection readers) is still alive.
//
// It tells the run's goroutines from everyone else's by a pprof label,
// which every goroutine inherits from the one that started it, so tests
// that run in parallel do not see each other's goroutines as leaks, as a
// process-wide check (goleak, runtime.NumGoroutine) would. It does not see
// goroutines the runtime starts for time.AfterFunc: those carry no label.
func NoGoroutineOutlives(t testing.TB, run func()) {
	t.Helper()
	outlives(t, leakBound, run)
}

// outlives is NoGoroutineOutlives with the bound as a parameter.
func outlives(t testing.TB, bound time.Duration, run func()) {
	t.Helper()
	if left := outlived(bound, run); len(left) > 0 {
		t.Errorf("%s", leakReport(left, bound))
	}
}

// outlived runs run and returns the goroutine groups it started that were
// still alive bound after it returned: none when all ended.
func outlived(bound time.Duration, run func()) []string {
	id := fmt.Sprint(lastRun.Add(1))
	pprof.Do(context.Background(), pprof.Labels(runLabel, id), func(context.Context) { run() })
	deadline := time.Now().Add(bound)
	for {
		left := labelled(id)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leakReport says which goroutine groups outlived their run by bound.
func leakReport(left []string, bound time.Duration) string {
	return fmt.Sprintf("%d goroutine group(s) of the run outlived it by %v:\n%s",
		len(left), bound, strings.Join(left, "\n\n"))
}

// labelled returns the goroutine profile's records (stacks grouped, as
// debug=1 prints them) whose labels include run id.
func labelled(id string) []string {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	mark := fmt.Sprintf("%q:%q", runLabel, id)
	var out []string
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(rec, mark) {
			out = append(out, rec)
		}
	}
	return out
}
