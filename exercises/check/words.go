package check

import (
	"fmt"

	"github.com/queuelab/qlab/flow"
)

// Decision says in a student's words what a handler's decision asks
// for: "ack", "retry via Q", "park in Q", "requeue at once", "drop".
func Decision(dec flow.Decision) string {
	switch dec.Action {
	case flow.ActAck:
		return "ack"
	case flow.ActRetry:
		return "retry via " + dec.To
	case flow.ActPark:
		return "park in " + dec.To
	case flow.ActRequeue:
		return "requeue at once"
	}
	return "drop"
}

// Count is n of noun, in words: "1 send", "0 sends", "2 sends".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
