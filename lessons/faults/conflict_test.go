package faults

import (
	"context"
	"errors"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// conflicted runs each lesson kept for it (conflictLessons) on names
// under which one of its queues already exists with other arguments and
// a message of its own (an earlier run at another --speed): the run must
// refuse with the 406 explained, and leave that queue, its message, and
// the node as they were (it once deleted the queue it had re-declared on
// its way out).
func conflicted(t *testing.T) {
	n := runNode.get(t)
	ls := lessonsOf(t, conflictLessons)
	var slugs []string
	for _, l := range ls {
		slugs = append(slugs, l.Slug())
	}
	concurrently(t, slugs, func(t *testing.T, i int) { runConflicted(t, n, ls[i]) })
}

func runConflicted(t *testing.T, n *rabbittest.Node, l lesson.Lesson) {
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	names := rabbit.RunNames()
	ran(n, names.Prefix)
	queue := names.Of(l.Topologies()[0].Queues[0].Name)
	conn, err := amqp.Dial(n.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, amqp.Table{"x-max-length": int64(99)}); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = ch.QueueDelete(queue, false, false, false) }()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	dc, err := ch.PublishWithDeferredConfirm("", queue, false, false, amqp.Publishing{Body: []byte("not the run's")})
	if err != nil || !dc.Wait() {
		t.Fatalf("publishing the earlier run's message: %v", err)
	}

	var rec labtest.Recorder
	_, runErr := lesson.Run(ctx, l, lesson.Options{Backend: lab.Rabbit, Broker: n.URL, Speed: 20, Names: rabbitenv.Of(names)}, &rec)
	var pre *rabbit.PreconditionError
	if !errors.As(runErr, &pre) || pre.Queue != queue {
		t.Fatalf("the run did not refuse with the 406 on %s explained: %v", queue, runErr)
	}
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("the refused run deleted %s, which it did not create: %v", queue, err)
	}
	if q.Messages != 1 {
		t.Errorf("%s holds %d messages after the refused run, want its 1", queue, q.Messages)
	}
	left, err := rabbit.Clean(ctx, n.URL, names, l.Topologies(), true) // a dry run: what is there
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Deleted) != 1 || len(left.Exchanges) > 0 {
		t.Errorf("the refused run changed the node's queues under its prefix: %+v, want only %s", left, queue)
	}
	report(t, "fault=conflict lesson="+l.Slug()+" refused with the 406 explained; "+queue+" and its message left as they were")
}
