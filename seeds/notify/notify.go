// Package notify is the notification service of seed 002, as its own
// documentation declares it: the queue names, arguments, exchange and
// binding, the JSON job a worker reads, and the retry schedule with its
// own arithmetic. Lessons Q14–Q17 run it; each shows one place where the
// document contradicts itself or RabbitMQ, and what the broker really does.
//
//	email-queue ─nack→ email-dlx (direct) ─"email-dlq"→ email-dlq
//	email-retry-queue (per-message TTL) ─expire→ "" ─"email-queue"→ email-queue
//
// The names are the document's; a run adds its private prefix.
package notify

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/queuelab/qlab/flow"
)

// The document's names (its config defaults).
const (
	EmailQueue = "email-queue"
	RetryQueue = "email-retry-queue"
	DLX        = "email-dlx"
	DLQ        = "email-dlq"
	DLQKey     = "email-dlq" // the routing key email-queue dead-letters with
)

// MaxLength is email-queue's x-max-length in the document.
const MaxLength = 100000

// Topology is the document's topology, argument for argument:
// email-queue (x-max-length, x-dead-letter-exchange email-dlx,
// x-dead-letter-routing-key email-dlq), email-retry-queue (dead-letters
// through the default exchange back to email-queue, a TTL per message),
// the direct exchange email-dlx and its binding to email-dlq.
// maxLength replaces MaxLength where a lesson scales it down (0 keeps it).
func Topology(maxLength int) flow.Topology {
	if maxLength == 0 {
		maxLength = MaxLength
	}
	return flow.Topology{
		Queues: []flow.Queue{
			{Name: EmailQueue, Role: flow.Work, MaxLength: maxLength, DeadLetterExchange: DLX, DeadLetterKey: DLQKey},
			{Name: RetryQueue, Role: flow.Delay, DeadLetterTo: EmailQueue},
			{Name: DLQ, Role: flow.DLQ},
		},
		Exchanges: []flow.Exchange{{Name: DLX, Kind: flow.Direct}},
		Bindings:  []flow.Binding{{Exchange: DLX, Queue: DLQ, Key: DLQKey}},
	}
}

// RetryDelays is the document's RETRY_DELAYS: 10 s, 30 s, 1 min, 2 min,
// 5 min (lesson time; a lesson may scale them).
var RetryDelays = []time.Duration{10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute}

// MaxRetries is the document's MAX_RETRIES = RETRY_DELAYS.length.
var MaxRetries = len(RetryDelays)

// RetryDelay is the document's getRetryDelay: the delay at index
// retryCount, the last one past the end.
func RetryDelay(retryCount int) time.Duration {
	return RetryDelays[min(max(retryCount, 0), len(RetryDelays)-1)]
}

// Job is the document's EmailJob: the JSON body of every message.
type Job struct {
	// Task is the lab's task id, the message id: not in the document, but
	// every body a lab run publishes names its task (rabbit.TaskProblem),
	// so a message that does not is parked, never taken for a job.
	Task      string  `json:"task"`
	Type      string  `json:"type"` // "verification" or "notification"
	Data      JobData `json:"data"`
	Timestamp int64   `json:"timestamp"` // ms since the epoch
	Retries   int     `json:"retries"`   // the body's own retry counter
}

// JobData is the document's EmailJobData, the fields the lab uses.
type JobData struct {
	NotificationID string `json:"notificationId"`
	To             string `json:"to,omitempty"`
	Email          string `json:"email,omitempty"`
	Subject        string `json:"subject,omitempty"`
	Message        string `json:"message,omitempty"`
}

// ErrBadJob wraps every reason DecodeJob refuses a body.
var ErrBadJob = errors.New("not an email job")

// DecodeJob reads a message body as a Job. It refuses, with an error
// wrapping ErrBadJob that says why, a body that is not JSON, has no
// notificationId or no recipient, or carries a negative retries count:
// such a message belongs in the DLQ with that reason, not in a worker.
func DecodeJob(body []byte) (Job, error) {
	var j Job
	if err := json.Unmarshal(body, &j); err != nil {
		return Job{}, fmt.Errorf("%w: %v", ErrBadJob, err)
	}
	switch {
	case j.Data.NotificationID == "":
		return Job{}, fmt.Errorf("%w: no data.notificationId", ErrBadJob)
	case j.Data.To == "" && j.Data.Email == "":
		return Job{}, fmt.Errorf("%w: no recipient (data.to or data.email)", ErrBadJob)
	case j.Retries < 0:
		return Job{}, fmt.Errorf("%w: retries %d is negative", ErrBadJob, j.Retries)
	}
	return j, nil
}

// Encode is the job's JSON body.
func (j Job) Encode() []byte {
	b, err := json.Marshal(j)
	if err != nil { // a Job has only strings and integers
		panic(err)
	}
	return b
}

// NewJob is a notification job for task (the lab's task id is the
// notificationId), addressed to task's customer.
func NewJob(task string, at time.Time) Job {
	return Job{
		Task:      task,
		Type:      "notification",
		Data:      JobData{NotificationID: task, To: task + "@example.com", Subject: "Order confirmation", Message: "Your order is confirmed."},
		Timestamp: at.UnixMilli(),
	}
}

// Topologies is what a lesson on the notification service declares, as
// Lesson.Topologies wants it (for qlab broker clean, which goes by queue
// names: every variant a lesson runs uses the document's names).
func Topologies() []flow.Topology { return []flow.Topology{Topology(0)} }
