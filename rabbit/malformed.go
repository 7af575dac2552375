package rabbit

import (
	"context"
	"encoding/json"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// MaxTaskBody bounds the body of a lab task. The lab's bodies are tens of
// bytes ({"task":"A"}, a Q11 mail request); a larger one did not come
// from a lesson, and is held before anything reads it.
const MaxTaskBody = 64 << 10

// TaskProblem says why d, which carries the run's AppId, is still no lab
// task, or returns "" when it is one: a message id (the task), content
// type application/json, a body of at most MaxTaskBody bytes that is a
// JSON object whose "task" is the message id. Publishing builds exactly
// such messages; a lesson's own body must keep the "task" field.
func TaskProblem(d amqp.Delivery) string {
	switch {
	case d.MessageId == "":
		return "no message id, so it names no task"
	case d.ContentType != "application/json":
		return fmt.Sprintf("content type %q, not application/json", d.ContentType)
	case len(d.Body) > MaxTaskBody:
		return fmt.Sprintf("a body of %d bytes, more than the %d a task carries", len(d.Body), MaxTaskBody)
	}
	var body TaskBody
	if err := json.Unmarshal(d.Body, &body); err != nil {
		return "a body that is not a JSON task: " + err.Error()
	}
	if body.Task != d.MessageId {
		return fmt.Sprintf("a body naming task %q under message id %q", body.Task, d.MessageId)
	}
	return ""
}

// Hold moves a delivery the run cannot handle to its hold queue, like a
// foreign one (see Consumer), with reason in ForeignReasonHeader, and acks
// it; no handler sees it and no event reports it, so the accounting of
// the run's tasks is untouched. A handler that finds a body it cannot use
// (a mail with no recipient) calls it instead of settling d. (flow.Park
// is another thing: it sends a task of the run to its DLQ, with an event.)
func (g *Guest) Hold(ctx context.Context, d *Delivery, reason string) {
	g.moveToHold(ctx, d.Queue, d.Delivery, reason)
}
