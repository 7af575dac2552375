package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
)

func TestScaleFlagsRefuseBadValues(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"zero tasks":         {[]string{"run", "1", "--tasks", "0"}, "--tasks must be between 1 and 100000, got 0"},
		"negative tasks":     {[]string{"run", "1", "--tasks", "-5"}, "--tasks must be between 1 and 100000, got -5"},
		"too many tasks":     {[]string{"run", "1", "--tasks", "100001"}, "--tasks must be between 1 and 100000"},
		"tasks not a number": {[]string{"run", "1", "--tasks", "lots"}, `invalid value "lots" for flag --tasks`},
		"zero rate":          {[]string{"run", "1", "--rate", "0"}, "--rate must be between 0.001 and 10000 tasks per lesson second, got 0"},
		"NaN rate":           {[]string{"run", "1", "--rate", "NaN"}, "--rate must be"},
		"infinite rate":      {[]string{"run", "1", "--rate", "+Inf"}, "--rate must be"},
		"rate too high":      {[]string{"run", "1", "--rate", "1e6"}, "between 0.001 and 10000"},
		"rate too low":       {[]string{"run", "1", "--rate", "1e-300"}, "between 0.001 and 10000"},
		"fixed scenario":     {[]string{"run", "11", "--tasks", "100"}, "lesson 11 runs a fixed scenario of its own: --tasks and --rate work with lessons 1, 2, 4, 10"},
		"fixed, rate only":   {[]string{"run", "12", "--rate", "5"}, "lesson 12 runs a fixed scenario of its own"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := qlab(c.args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, c.want)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line")
			assert.Empty(t, out)
		})
	}
}

// TestRunTasksAndRate: qlab run 2 --tasks 500 --rate 40 --json prints a
// summary for each of the 500 tasks, the last arriving 499/40 s after the
// first. It runs in a synctest bubble, so lesson time is exact.
func TestRunTasksAndRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		code, out, errOut := qlabChecked(t, "run", "2", "--tasks", "500", "--rate", "40", "--speed", "1000", "--json")
		require.Equal(t, exitOK, code, errOut)
		summaries := map[string]int{}
		enqueuedAt := map[string]int64{}
		sc := bufio.NewScanner(strings.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e lab.Event
			require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
			switch e.Kind {
			case lab.Summary:
				summaries[e.Task]++
			case lab.Enqueued:
				if _, seen := enqueuedAt[e.Task]; !seen {
					enqueuedAt[e.Task] = e.TMs
				}
			}
		}
		require.Len(t, summaries, 500)
		for task, n := range summaries {
			require.Equal(t, 1, n, "task %s", task)
		}
		assert.Equal(t, int64(499*25), enqueuedAt["t500"]-enqueuedAt["t001"], "one arrival every 25 ms of lesson time")
	})
}
