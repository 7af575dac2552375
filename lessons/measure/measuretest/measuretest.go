// Package measuretest runs the measured lessons' bodies in tests. Test
// code only.
package measuretest

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/measure"
	"github.com/queuelab/qlab/render"
)

// Func is a measured lesson's body: it runs the lesson on env and
// returns the runs it measured on streams of their own.
type Func func(ctx context.Context, env *lesson.Env) ([]*measure.MeasuredRun, error)

// InMem runs a measured lesson's body inside a synctest bubble, the
// way Run runs the lesson (the lessons only drop the runs), and
// returns the lesson stream's events, its tables and the measured runs.
func InMem(t *testing.T, l lesson.Lesson, f Func) ([]lab.Event, []render.Table, []*measure.MeasuredRun) {
	t.Helper()
	var rec lab.Recorder
	var env *lesson.Env
	var runs []*measure.MeasuredRun
	synctest.Test(t, func(t *testing.T) {
		env = &lesson.Env{Stream: lab.NewStream(l.Slug(), lab.InMem, lab.NewClock(1), &rec), Plan: lab.DefaultPlan()}
		var err error
		runs, err = f(context.Background(), env)
		require.NoError(t, err)
		env.Stream.Finish()
	})
	return rec.Events, env.Tables(), runs
}

// AttemptsBy counts the started events per actor for the tasks keep selects.
func AttemptsBy(events []lab.Event, keep func(id string) bool) map[string]int {
	n := map[string]int{}
	for _, e := range events {
		if e.Kind == lab.Started && keep(e.Task) {
			n[e.Actor]++
		}
	}
	return n
}
