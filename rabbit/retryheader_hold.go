package rabbit

import (
	"context"
	"fmt"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
)

// holdUncounted takes delivery d, whose attempt count failed validation
// (cause: a forged x-retries, a negative or huge x-death count), out of
// the loop without processing it. A message that cannot say which attempt
// it is could loop for ever or skip the DLQ, so no handler sees it: it
// goes to the run's hold queue, the same queue foreign messages go to
// (Session.hold; the reason in ForeignReasonHeader), and the stream says
// so with a dead_lettered event whose note gives the reason. If holding it
// fails, the message is rejected along its queue's dead-letter route and
// the stream reports it lost.
func (f *Flow) holdUncounted(ctx context.Context, c flow.Consumer, d *Delivery, cause error) {
	hold := f.s.Names.hold()
	reason := fmt.Sprintf("its attempt count cannot be trusted (%v); parked unprocessed in %s", cause, hold)
	e := lab.Event{Task: d.Task, Queue: d.Queue, Actor: c.Actor, Kind: lab.DeadLettered, To: hold, Note: reason}
	if err := f.s.hold(ctx, d.Delivery, reason); err != nil {
		e.Kind, e.To, e.Note = lab.Lost, "", fmt.Sprintf("%s; holding it failed (%v): rejected without requeue", reason, err)
		f.stream.Emit(e)
		f.move(d, f.topology().DeadLetterTarget(d.Queue), d.Reject)
		return
	}
	f.s.Logger.Warn("rabbit: message with an untrusted attempt count moved to the hold queue",
		"queue", f.s.Names.Of(d.Queue), "message_id", d.MessageId, "err", cause.Error(), "hold", hold)
	f.stream.Emit(e)
	f.ack(d)
}
