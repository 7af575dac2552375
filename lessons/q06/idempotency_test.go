package q06

import (
	"os"
	"testing"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/render"
)

func TestQ06Print(t *testing.T) {
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{Plan: lessontest.SeededPlan(7)})
	render.Transcript(os.Stdout, events, res.Tables)
}
