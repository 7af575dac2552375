package notify

import "time"

// Decide is the document's catch block for a job that has failed with
// retriesBefore in its body: job.retries++ first, then either the DLQ
// (retries >= MAX_RETRIES: dead) or the retry queue with
// getRetryDelay(retries). Because the increment comes first, the first
// retry already reads RETRY_DELAYS[1].
func Decide(retriesBefore int) (retries int, delay time.Duration, dead bool) {
	retries = retriesBefore + 1
	if retries >= MaxRetries {
		return retries, 0, true
	}
	return retries, RetryDelay(retries), false
}

// Waits are the delays a job that never succeeds sits out under the
// document's code, in order, before it lands in the DLQ: 30 s, 1 min,
// 2 min, 5 min. Four retries (the text says three); 10 s is never used.
func Waits() []time.Duration {
	var out []time.Duration
	for retries := 0; ; {
		var delay time.Duration
		var dead bool
		retries, delay, dead = Decide(retries)
		if dead {
			return out
		}
		out = append(out, delay)
	}
}
