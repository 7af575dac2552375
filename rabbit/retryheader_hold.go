package rabbit

import (
	"context"
	"fmt"
)

// holdUncounted takes delivery d, whose attempt count cannot be trusted
// (cause: a forged x-retries, a negative or huge x-death count), out of
// the loop without processing it. The run never writes such a count, so
// d is a copy from outside that carries the run's app-id and a task id of
// the run: it could loop for ever or skip the DLQ, so no handler sees it,
// and it must not change that task's fate. It is held like a foreign
// message (Guest.moveToHold: the hold queue, the reason in
// ForeignReasonHeader, a warning), and the task's own message is still
// expected.
func (f *Flow) holdUncounted(ctx context.Context, d *Delivery, cause error) {
	f.s.guest.moveToHold(ctx, d.Queue, d.Delivery, fmt.Sprintf("its attempt count cannot be trusted (%v)", cause))
}
