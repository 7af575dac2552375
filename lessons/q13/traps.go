package q13

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/email"
)

// q13Nack is the service's nack(msg). amqplib's nack(message, allUpTo,
// requeue) sends requeue=true when the argument is left out; amqp091-go's
// Nack(multiple, requeue bool) has no defaults, and the same call is
// d.Nack(false, true). The service meant d.Nack(false, false), a reject
// that email_queue dead-letters into email_queue_wait. A requeue instead
// puts the mail straight back on email_queue: no x-death entry, no wait,
// the same attempt again. The service has no guard, so its loop never
// ends and the mail never reaches the DLQ; the lab's guard drops it after
// q13HotLoopGuard deliveries so the run can end, and says so (Q01 stops
// its poison loop the same way).
func q13Nack(readings *q13Readings, d *flow.Delivery) flow.Decision {
	if n := readings.nacked(d.Task, d.Attempt); n < q13HotLoopGuard {
		return flow.Requeue() // on the broker: basic.nack, multiple=false, requeue=true
	}
	return flow.Drop(fmt.Sprintf("the lab's guard, not the service: %d deliveries, each read as attempt %d, none through %s; "+
		"the service's nack(msg) would requeue it forever and never reach the DLQ", q13HotLoopGuard, d.Attempt, email.WaitQueue))
}

// q13Undeclared is what the broker answered to the service's last step,
// sendToQueue('email_queue_dlq'), when nobody declared that queue.
type q13Undeclared struct {
	plain, mandatory rabbit.Unroutable
}

// q13Unroutable publishes one mail to an email_queue_dlq the run never
// declared (the service's setup asserts only email_queue and
// email_queue_wait), without and then with mandatory, on a session of its
// own. The message is no task of the run: no event is about it.
func q13Unroutable(ctx context.Context, env *lesson.Env) (*q13Undeclared, error) {
	b, err := env.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer env.Close(ctx, b)
	s, err := rabbit.SessionOf(b)
	if err != nil {
		return nil, err
	}
	var u q13Undeclared
	if u.plain, err = s.Probes().PublishUnroutable(ctx, email.DLQ, "dlq-probe", false); err != nil {
		return nil, err
	}
	if u.mandatory, err = s.Probes().PublishUnroutable(ctx, email.DLQ, "dlq-probe", true); err != nil {
		return nil, err
	}
	return &u, nil
}

// q13TrapTable shows what the service's two traps did: the requeue loop
// of run 3, as measured on each delivery, and (on the broker) the publish
// to the undeclared DLQ.
func q13TrapTable(broker flow.Facts, poison []string, readings *q13Readings, u *q13Undeclared) render.Table {
	t := render.Table{
		Title:  "What happened to the NestJS email service's two traps",
		Header: []string{"trap", "the service's code", "what happened"},
		Notes: []string{
			"amqplib's nack(msg) is nack(msg, allUpTo=false, requeue=true). amqp091-go's Delivery.Nack(multiple, requeue) has no defaults: " +
				"that call is d.Nack(false, true); the service meant d.Nack(false, false), which email_queue dead-letters into email_queue_wait.",
			fmt.Sprintf("The closing table counts %d attempts for the requeued mail: each delivery ran the handler, while the attempt number it read never moved from 1.", q13HotLoopGuard),
		},
	}
	if broker.Broker {
		t.Title += " (RabbitMQ " + broker.Version + ")"
	}
	for _, task := range readings.nackedTasks() {
		t.Rows = append(t.Rows, []string{"nack(msg) requeues", "nack(); // to the wait queue", q13HotLoop(task, readings, broker.Broker)})
	}
	if u == nil {
		t.Rows = append(t.Rows, []string{"undeclared email_queue_dlq", "sendToQueue('email_queue_dlq', …); ack()",
			"broker only: in memory publishing to a queue the topology lacks is an error (flow.ErrNoRoute)"})
		return t
	}
	t.Rows = append(t.Rows,
		[]string{"undeclared email_queue_dlq", "sendToQueue('email_queue_dlq', …); ack()", q13Answer(u.plain)},
		[]string{"the same, mandatory", "sendToQueue(…, {mandatory: true})", q13Answer(u.mandatory)})
	t.Notes = append(t.Notes, "A confirm says the broker took the message, not that a queue holds it: an unroutable message is acked. "+
		"Declare email_queue_dlq with the other two queues, and publish with mandatory (amqp091-go: Channel.NotifyReturn) to hear when nothing took it.")
	return t
}

// q13HotLoop describes task's requeue loop from what each delivery read.
func q13HotLoop(task string, readings *q13Readings, broker bool) string {
	attempts := readings.nackAttempts(task)
	out := fmt.Sprintf("%s: %d deliveries in a row, the attempt read %s", task, len(attempts), q13Distinct(attempts))
	if !broker {
		return out + "; no timer: it never waited"
	}
	var firsts, expired []int
	for _, r := range readings.of(task) {
		firsts, expired = append(firsts, int(r.first)), append(expired, int(r.expired))
	}
	return out + fmt.Sprintf("; x-death[0].count ?? 1 read %s; trips through %s: %s", q13Distinct(firsts), email.WaitQueue, q13Distinct(expired))
}

// q13Answer says what the broker answered to one unroutable publish.
func q13Answer(u rabbit.Unroutable) string {
	confirm := "nack"
	if u.Confirmed {
		confirm = "ack"
	}
	ret := "none"
	if u.Returned {
		ret = fmt.Sprintf("%d %s", u.ReplyCode, u.ReplyText)
	}
	fate := "the mail is gone, and the worker acks the original"
	switch {
	case u.QueueExists:
		fate = "the queue exists after all"
	case u.Returned:
		fate = "the publisher learns that nothing took it"
	}
	return fmt.Sprintf("confirm: %s; basic.return: %s; email_queue_dlq afterwards: %s → %s", confirm, ret, q13Exists(u.QueueExists), fate)
}

func q13Exists(ok bool) string {
	if ok {
		return "exists"
	}
	return "does not exist"
}

// q13Distinct lists the distinct values of ns in order ("1" when all are 1).
func q13Distinct(ns []int) string {
	var out []string
	for _, n := range slices.Compact(slices.Clone(ns)) {
		out = append(out, fmt.Sprint(n))
	}
	if len(out) == 1 {
		return "all " + out[0]
	}
	return strings.Join(out, ", ")
}
