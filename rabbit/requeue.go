package rabbit

import "strings"

// RequeuePlace says where a message given back with requeue (basic.nack
// or basic.reject, requeue true) lands in a queue of the given type on a
// broker of version: not always the tail, as a fast retry in memory is.
// limited is whether a quorum queue declares x-delivery-limit. Measured
// with one consumer at prefetch 1 nacking the first of three messages: a
// classic queue handed the same message out again at once on 3.10.8 and
// 4.3.6, as the negative acknowledgements guide says ("placed to its
// original position in its queue, if possible"). A quorum queue on 3.10.8
// without a limit handed out the two behind it first; with one, the same
// message again at once, as on 4.3.6 with or without a limit (every 4.x
// quorum queue has one: 20 unless set). 3.10's rabbit_fifo turns a
// return into a fresh enqueue only when the delivery limit is undefined.
func RequeuePlace(quorum, limited bool, version string) string {
	switch {
	case !quorum:
		return "back at its original position, ahead of what was published after it, " +
			"not at the tail (RabbitMQ's negative acknowledgements guide)"
	case strings.HasPrefix(version, "3.") && !limited:
		return "back at the tail: a quorum queue on RabbitMQ 3.x without x-delivery-limit " +
			"appends what is given back (measured on 3.10.8)"
	case strings.HasPrefix(version, "3."):
		return "back at the head: a quorum queue on RabbitMQ 3.x with x-delivery-limit " +
			"hands out what is given back first (measured on 3.10.8)"
	default:
		return "back at the head: a quorum queue on RabbitMQ 4.x hands out what is given back " +
			"first (measured on 4.3.6)"
	}
}
