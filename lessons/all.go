// Package lessons is QueueLab's curriculum: the ordered registry All that
// the CLI, the TUI, compare and the README table read. Each lesson lives in
// a package of its own, lessons/qNN, in a file that opens with what the
// student should notice; package lesson has what they share.
package lessons

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/queuelab/qlab/lessons/q01"
	"github.com/queuelab/qlab/lessons/q02"
	"github.com/queuelab/qlab/lessons/q03"
	"github.com/queuelab/qlab/lessons/q04"
	"github.com/queuelab/qlab/lessons/q05"
	"github.com/queuelab/qlab/lessons/q06"
	"github.com/queuelab/qlab/lessons/q07"
	"github.com/queuelab/qlab/lessons/q08"
	"github.com/queuelab/qlab/lessons/q09"
	"github.com/queuelab/qlab/lessons/q10"
	"github.com/queuelab/qlab/lessons/q11"
	"github.com/queuelab/qlab/lessons/q12"
	"github.com/queuelab/qlab/lessons/q13"
	"github.com/queuelab/qlab/lessons/q14"
	"github.com/queuelab/qlab/lessons/q15"
	"github.com/queuelab/qlab/lessons/q16"
	"github.com/queuelab/qlab/lessons/q17"
	"github.com/queuelab/qlab/lessons/q18"
	"github.com/queuelab/qlab/lessons/q19"
	"github.com/queuelab/qlab/lessons/q20"
	"github.com/queuelab/qlab/lessons/q21"
	"github.com/queuelab/qlab/lessons/q22"
	"github.com/queuelab/qlab/lessons/q23"
	"github.com/queuelab/qlab/lessons/q24"
	"github.com/queuelab/qlab/lessons/q25"

	"github.com/queuelab/qlab/lesson"
	// The broker mechanism: every lesson of the registry can run there.
	_ "github.com/queuelab/qlab/lesson/rabbitenv"
)

// All is the curriculum in order.
var All = []lesson.Lesson{
	q01.Lesson,
	q02.Lesson,
	q03.Lesson,
	q04.Lesson,
	q05.Lesson,
	q06.Lesson,
	q07.Lesson,
	q08.Lesson,
	q09.Lesson,
	q10.Lesson,
	q11.Lesson,
	q12.Lesson,
	q13.Lesson,
	q14.Lesson,
	q15.Lesson,
	q16.Lesson,
	q17.Lesson,
	q18.Lesson,
	q19.Lesson,
	q20.Lesson,
	q21.Lesson,
	q22.Lesson,
	q23.Lesson,
	q24.Lesson,
	q25.Lesson,
}

// Find returns the lesson numbered n.
func Find(n int) (lesson.Lesson, bool) {
	for _, l := range All {
		if l.Number() == n {
			return l, true
		}
	}
	return lesson.Lesson{}, false
}

// Next returns the lesson after l in the curriculum, if there is one.
func Next(l lesson.Lesson) (lesson.Lesson, bool) {
	for i, x := range All {
		if x.ID == l.ID && i+1 < len(All) {
			return All[i+1], true
		}
	}
	return lesson.Lesson{}, false
}

// Parse finds a lesson from user input: "7", "07", "q7" or "Q07".
func Parse(s string) (lesson.Lesson, error) {
	n, err := strconv.Atoi(strings.TrimLeft(strings.TrimPrefix(strings.ToLower(s), "q"), "0"))
	if l, ok := Find(n); err == nil && ok {
		return l, nil
	}
	return lesson.Lesson{}, fmt.Errorf("unknown lesson %s (see qlab list)", s)
}
