package faults

import (
	"slices"
	"testing"

	"github.com/queuelab/qlab/lesson"
)

// The lessons each fault mechanism runs. A lesson is kept for a mechanism
// only when its code meets that fault on a path no other kept lesson
// takes (the comment says which); every other enrolled lesson meets it on
// a kept lesson's path, and doc.go says which cases were dropped and
// where each dropped lesson is still run. Two mechanisms run every lesson
// they can: the broker kept down (outageFaults: each run is cut short, and
// it is where each lesson's Lesson.Topologies is held complete) and the
// database away (every Lesson.Store lesson: each keeps its store its own
// way). TestEveryEnrolledLessonHasACase holds the lists to the lessons
// enrolled with Lesson.Faults.
var (
	// closeLessons meet every connection of their run closed.
	closeLessons = []string{
		"Q10", // the flow path (flow consumers, the publisher, republish to
		// a wait queue) most lessons reach the broker through alone
		"Q11", // a sibling session per scheduler process and a publisher of
		// its own, with per-message TTLs: a second connection of the run
		"Q15", // a worker on a connection of its own (Session.Dial) and a
		// run that settles by a deadline of its own
		"Q18", // a session per part (a close may find none open: it lands
		// at the next event) and PublishTo, which outlives a lost channel
	}
	// restartLessons meet the broker application stopped and started: the
	// redial meets refused connections, and a publish may be nacked.
	restartLessons = []string{
		"Q10", // the flow path
		"Q11", // a sibling session opened while the broker is away, and a
		// nacked publish (strategy a) that may end the run
		"Q15", // its settle deadline includes the session's give-up (a
		// restart under load once ended it)
	}
	// deleteLessons meet one of their queues deleted from outside.
	deleteLessons = []string{
		"Q10", // the flow path: a consumer, a mandatory publish or the
		// watch meets the missing queue and ends the run
		"Q11", // its first "queue" is the scheduler's memory: the victim is
		// a broker queue its router gives up after 3 tries
		"Q15", // settles by a deadline of its own (work, 10 s, give-up)
		"Q16", // reads its queue with basic.get on a channel of its own
	}
	// killLessons are run as a child qlab that is killed.
	killLessons = []string{
		"Q10", // queues only: refused, named, cleaned, run again
		"Q18", // a status store too, which qlab broker clean must remove
	}
	// conflictLessons find one of their queues declared with other
	// arguments.
	conflictLessons = []string{
		"Q10", // declares through the flow (env.Declare)
		"Q11", // declares on its own session (Session.Topo)
		"Q18", // a session per part: refused in the first, it must not go
		// on to the next
	}
)

// lessonsOf is the enrolled lessons with those ids, in that order; an id
// that is no enrolled lesson fails t.
func lessonsOf(t *testing.T, ids []string) []lesson.Lesson {
	t.Helper()
	var ls []lesson.Lesson
	for _, id := range ids {
		i := slices.IndexFunc(enrolled(), func(l lesson.Lesson) bool { return l.ID == id })
		if i < 0 {
			t.Fatalf("%s is no lesson enrolled in the fault suite (Lesson.Faults)", id)
		}
		ls = append(ls, enrolled()[i])
	}
	return ls
}

// TestEveryEnrolledLessonHasACase: each lesson a mechanism names is
// enrolled in the fault suite (Lesson.Faults, with a broker run).
func TestEveryEnrolledLessonHasACase(t *testing.T) {
	lists := [][]string{closeLessons, restartLessons, deleteLessons, killLessons, conflictLessons}
	for _, ids := range lists {
		lessonsOf(t, ids)
	}
	if len(enrolled()) == 0 {
		t.Fatal("no lesson is enrolled (Lesson.Faults): the broker kept down has no case")
	}
}
