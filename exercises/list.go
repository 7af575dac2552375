package exercises

// All is every exercise, in the order a student does them.
var All = []Exercise{
	{
		Dir: "01_requeue", File: "requeue.go", Lesson: "Q01",
		Title: "Fast retry: re-enqueue a failed task at the tail",
		Hints: []Hint{
			{When: "nothing lost: every task ends done or dropped", Text: "Retry must leave every failed task somewhere. A task that Retry neither requeues nor drops just vanishes: the log's last word on it is its failure."},
			{When: "a poison task is given up after MaxAttempts", Text: "t.Attempt counts the attempts so far, the failed one included. When it has reached MaxAttempts, call sys.Drop and return."},
			{When: "a failed task goes to the tail: the next task is not held up", Text: "Retrying in place (calling sys.Attempt again inside Retry) holds up every task behind the failed one. Put it back on the queue instead."},
			{Text: "queue.Requeue(actor, t) puts t back at the tail of the same queue and says so in the log."},
		},
	},
	{
		Dir: "02_retry_queue", File: "retry_queue.go", Lesson: "Q02",
		Title: "A retry queue and a Retry-Worker",
		Hints: []Hint{
			{When: "a failed task moves to retryQueue", Text: "In the Sequential-Worker, after a failed attempt, queue.MoveTo(actor, t, retryQueue) hands the task over and says so in the log."},
			{When: "the Retry-Worker gives it a second attempt", Text: "A second sys.Worker(\"Retry-Worker\", retryQueue, …) runs in its own goroutine: that is what lets the Sequential-Worker go on with D."},
			{When: "a task ends done if its retry succeeds, dropped if not", Text: "In the Retry-Worker, sys.Attempt returns the attempt's error; when it is not nil, sys.Drop the task with a reason."},
			{When: "the next task starts as soon as one fails (it is not held up)", Text: "Retrying inside the Sequential-Worker (a second sys.Attempt there) holds up every task behind the failed one."},
		},
	},
	{
		Dir: "03_delayed_retry", File: "delayed_retry.go", Lesson: "Q05",
		Title: "Retry after a delay on a timer, not a sleep",
		Hints: []Hint{
			{When: "nothing lost: every task ends done or dropped", Text: "RetryLater must hand the task to something: until it calls sys.ScheduleOn, a failed task simply vanishes."},
			{When: "the worker does not wait with the task (no sleep): it takes the next task at once", Text: "time.Sleep (or sys.Sleep) inside RetryLater holds the worker: D waits behind C. A timer holds the task instead, and RetryLater returns at once."},
			{When: "the timer runs on the lesson clock (sys.Clock()), not the wall clock", Text: "time.AfterFunc counts real time; the lesson may run faster (qlab run --speed). The System's clock has an AfterFunc of its own that counts lesson time: ask sys for it."},
			{When: "lesson time moves on: nothing blocks the run", Text: "Your start func runs while the System holds its lock: a sleep there stops everything. Arm a timer and return it; the timer does the waiting."},
			{When: "the retry starts exactly when the delay is over", Text: "The delay you pass to ScheduleOn is only what the log says; the timer your start func arms is what waits. Arm it for the same Delay."},
			{Text: "ScheduleOn's last argument is a func: it receives move and returns the *time.Timer it armed to call move later."},
		},
	},
	{
		Dir: "04_idempotent", File: "send.go", Lesson: "Q06",
		Title: "Send each email exactly once, through redeliveries and failures",
		Hints: []Hint{
			{When: "no customer gets an email twice", Text: "A second delivery of the task sent again: a redelivery after a lost ack, or a retry after a failure that struck once the email was out but before you wrote that down. Give Send an idempotency key that is the same on every delivery (the task id): the mail server then answers instead of sending."},
			{When: "a task that ends done had its email sent (none lost silently)", Text: "You wrote something before the email went out and the failure struck in between: the retry found your mark and skipped an email never sent. Write only after Send returned. A claim (db.Insert) has the same trap: a process that dies holding it never releases it."},
			{When: "a repeat of a task already done is answered from your store: the mail server is not asked again", Text: "Before sending, look for the stored result: if db.Get finds it, the email went out on an earlier delivery, so return nil. After a Send that worked, db.Put the message id under a key of the task."},
			{Text: "The order that survives every failure: db.Get (found? return nil), then mail.Send(task, task), then db.Put(the same key, the message id)."},
		},
	},
	{
		Dir: "05_backoff", File: "backoff.go", Lesson: "Q07",
		Title: "Exponential backoff: wait 1 s, then 2 s, then 4 s",
		Hints: []Hint{
			{When: "Backoff doubles: 1 s, 2 s, 4 s …", Text: "Backoff(n) is FirstBackoff times 2 to the power n-1: doubled once per failed attempt before the last one. A left shift of a Duration doubles it once per bit."},
			{When: "after a failure the task is scheduled for retryQueue with the right delay", Text: "RetryAfter still waits FirstBackoff every time: use Backoff(t.Attempt), the number of the attempt that just failed."},
			{When: "the retry starts exactly when the delay is over", Text: "The delay you pass to ScheduleOn and the one you give AfterFunc must be the same value."},
			{When: "the worker does not wait with the task (no sleep): it takes the next task at once", Text: "A sleep in RetryAfter, or in the start func you give ScheduleOn (it runs on the worker's goroutine), holds the worker: the next task waits. Only the timer may wait."},
			{When: "lesson time moves on: nothing blocks the run", Text: "Your start func runs while the System holds its lock: a time.Sleep there stops lesson time for everyone. Arm a timer for the delay and return it at once."},
			{Text: "Compare the gaps in the transcript: 1000 ms after the first failure, 2000 ms after the second."},
		},
	},
	{
		Dir: "06_dead_letter", File: "dead_letter.go", Lesson: "Q08",
		Title: "Park a failed task in the dead-letter queue instead of dropping it",
		Hints: []Hint{
			{When: "nothing lost: every task ends done or dead", Text: "A dropped task is gone: the log's dropped line is all that is left. Park it instead, so someone can look at it later."},
			{When: "a task that failed every retry is parked in deadLetterQueue with a reason", Text: "from.DeadLetter(actor, t, dlq, reason) parks t in dlq and logs why; say why in reason."},
			{When: "the dead-letter queue holds the parked tasks at the end", Text: "Nothing consumes the dead-letter queue here: a parked task stays in it for a person. Park each exhausted task exactly once."},
			{When: "a parked task is not also dropped: it ends in one place", Text: "Replace the sys.Drop call, do not add to it: a task must end in one place, and the log must not say dropped for a task that is kept."},
		},
	},
	{
		Dir: "07_dlq_alert", File: "dlq_alert.go", Lesson: "Q09",
		Title: "Alert from a separate DLQ-Worker",
		Hints: []Hint{
			{When: "one alert per task in the dead-letter queue, none for the others", Text: "Start a worker named DLQ-Worker on dlq with sys.Worker: its function runs once per task that lands there."},
			{When: "one alert per task in the dead-letter queue, none for the others", Text: "The mail is sent by mailer.Send, with inmem.DLQAlert's text for the task, inside the DLQ-Worker's function, so its 5 s never hold up a retry worker."},
			{When: "a separate DLQ-Worker takes the task off the queue, then alerts", Text: "Say that the DLQ-Worker took the task before it sends: emit a lab.Received event on sys.Stream() naming the task, dlq's name and the actor."},
			{When: "nothing lost: every task ends done or dead", Text: "Until a worker consumes dlq, the run cannot end: the dead-letter queue here is a working queue, not a holding one."},
		},
	},
	{
		Dir: "08_wait_queues", File: "wait_queues.go", Lesson: "Q10", Broker: true,
		Title: "Declare the TTL + dead-letter wait queues: the broker does the waiting",
		Hints: []Hint{
			{When: "the work queue dead-letters a rejected message to the wait queue", Text: "A queue's dead-letter route is two arguments: \"x-dead-letter-exchange\" (\"\" is the default exchange, which routes by queue name) and \"x-dead-letter-routing-key\" (the wait queue's name). A reject with requeue false then takes that route."},
			{When: "the wait queue holds a message for the TTL, then sends it back", Text: "\"x-message-ttl\" is in milliseconds and must be an integer: ttl.Milliseconds() (an int64). A float is refused, and a constant passes only one of the two waits. The wait queue needs the two dead-letter arguments too, pointing back to the work queue."},
			{When: "the broker accepts your arguments", Text: "The broker refuses a declare whose argument has the wrong type (x-message-ttl as a string or a float) with a 406 PRECONDITION_FAILED: the message names the argument."},
			{When: "a rejected message comes back to the work queue after the wait", Text: "Nobody consumes the wait queue: a message leaves it only by expiring, and its dead-letter route is what brings it back. Check that the routing key is the work queue's full name (the checker's queues carry a prefix: use the name you are given)."},
		},
	},
	{
		Dir: "09_breaker_decision", File: "decision.go", Lesson: "Q12",
		Title: "The handler's decision around a circuit breaker",
		Hints: []Hint{
			{When: "the breaker opens while the service is down: your calls go through it", Text: "Make the call through the breaker: err := cb.Execute(ctx, send). Calling send yourself, the breaker never sees a failure and never opens."},
			{When: "no call reaches the service while the breaker is open", Text: "When cb.Execute returns breaker.ErrOpen (errors.Is), the breaker refused without calling: that is the point. Do not call send yourself then; retry the mail through the wait queue."},
			{When: "the decision: ack a sent mail, retry the rest via email_queue_wait, park at the last delivery", Text: "A fast fail is a failure like any other: flow.Retry(EmailWait, err), so the mail waits out the TTL. flow.Requeue() brings it straight back (a hot loop), and parking it loses a mail that could have gone out a minute later."},
			{When: "a mail is parked only after its 15 deliveries", Text: "Park when d.Attempt >= MaxDeliveries, and only then: flow.Park(EmailDLQ, why). d.Attempt counts deliveries, fast fails included, as the seed's x-death count does."},
		},
	},
	{
		Dir: "10_attempt", File: "attempt.go", Lesson: "Q13",
		Title: "Read the attempt from x-death and from your own header, refusing forgeries",
		Hints: []Hint{
			{When: "x-death: the attempt is 1 + the count", Text: "x-death is a []any of amqp.Table, one entry per (queue, reason). Add up the \"count\" of the entries whose \"reason\" is \"rejected\" (not \"expired\": the wait queue's TTL expiry is not a failed attempt), then add 1."},
			{When: "x-death: a header only a forger writes is refused with an error", Text: "Check every type assertion with the two-value form (v, ok := x.([]any)) and return an error when it fails; a count must be an int64 in 0..MaxRetries, and so must the sum."},
			{When: "qlab-retries: the attempt is 1 + the count", Text: "A type switch on headers[RetriesHeader] with cases int64 and int32 reads both widths a publisher may write; a missing header is attempt 1."},
			{When: "qlab-retries: a header only a forger writes is refused with an error", Text: "Anything that is not an int64 or int32 in 0..MaxRetries is refused: a string \"3\", a float 3.0, -1, 101. Believing a forged count of a billion would park the message at once, or never."},
		},
	},
	{
		Dir: "11_nack_route", File: "nack_route.go", Lesson: "Q15", Broker: true,
		Title: "Where does a nack go? A retry with its delay, the last failure to email-dlq",
		Hints: []Hint{
			{When: "a nack reaches email-dlq through email-dlx", Text: "A nack (requeue false) goes where the queue's dead-letter arguments say, nowhere else: without \"x-dead-letter-exchange\" it is dropped. Give email-queue both dead-letter arguments: the exchange n.DLX, and as the routing key n.DLQKey, the key email-dlx binds email-dlq with (a direct exchange routes only an exact key)."},
			{When: "a nack reaches email-dlq through email-dlx", Text: "That is the diagram's route: a nack into email-retry-queue, where nothing ever expires it (a nack cannot set an expiration, and the queue has no TTL). The nack is for the last failure only, and its route is email-dlx → email-dlq."},
			{When: "a failure with attempts left: a copy to email-retry-queue with its delay, then ack", Text: "A nack cannot carry a delay: email-retry-queue has no TTL of its own, so the wait must travel on the message. Publish a copy of the job (job.Retries one higher, job.Encode()) to n.RetryQueue with Expiration set to p.Delay(job.Retries) in milliseconds as a decimal string, then ack the original."},
			{When: "each delivery is settled exactly once", Text: "Settle every delivery once: after the copy, ack; at the limit, nack; and then return. A second ack of the same delivery tag is a channel error: the broker closes the channel (406 PRECONDITION_FAILED, unknown delivery tag) and requeues everything unacked on it, so emails go out twice."},
			{When: "never requeued: a retry waits in email-retry-queue", Text: "Nack(false, true) puts the message back in email-queue: it comes straight back, redelivered, with no wait at all, a hot loop. Requeue false, always: the wait is email-retry-queue's job."},
			{When: "the last failure is a nack (requeue false), no copy", Text: "Count first (job.Retries++), then decide: when the new count reaches p.Attempts, d.Nack(false, false) and return, so email-queue's dead-letter route parks it in email-dlq with x-death saying \"rejected\" from email-queue. Publishing it into email-dlq yourself leaves no x-death."},
		},
	},
	{
		Dir: "12_delay_queues", File: "delay_queues.go", Lesson: "Q14", Broker: true,
		Title: "A wait queue per delay: no retry held up behind a longer one",
		Hints: []Hint{
			{When: "a short retry is not held up behind a long one", Text: "RabbitMQ expires a message only at the head of its queue: in one retry queue a 30 s retry behind a 5 min one waits the 5 minutes. In a queue where every message waits the same time, the head is always the first due."},
			{When: "a short retry is not held up behind a long one", Text: "A quorum queue does not help: on 3.10.8 it expires at the head too (lesson Q14 measures it). Give each distinct delay a queue of its own, named from n.Retry and the delay."},
			{When: "each retry waits its own delay: the TTL of the queue it waited in", Text: "Retry n waits delays[n-1] (the last delay past the end): RetryRoute must pick the queue whose x-message-ttl is that delay. The queue's TTL is the wait, so the message needs no expiration."},
			{When: "every retry comes back to the work queue", Text: "A wait queue needs a way back: \"x-dead-letter-exchange\" \"\" (the default exchange routes by queue name) and \"x-dead-letter-routing-key\" the work queue. Without them an expired message is dropped."},
			{When: "the broker accepts your retry queues", Text: "\"x-message-ttl\" is an integer of milliseconds (d.Milliseconds(), an int64): the broker refuses a float or a string with 406 PRECONDITION_FAILED."},
		},
	},
	{
		Dir: "13_dlq_replay", File: "dlq_ops.go", Lesson: "Q16", Broker: true,
		Title: "Operate the DLQ: read without taking, replay with the count reset",
		Hints: []Hint{
			{When: "reading leaves the DLQ as it was: every message, in order", Text: "Get with autoAck true is a take: the broker forgets the message as it hands it over (the management UI's \"Automatic ack\" mode does the same). Get with autoAck false holds the message for you until you settle it."},
			{When: "peek shows the first n messages, in order, each once", Text: "A message you hand back (nack with requeue) goes back to the head of the queue: the next Get returns it again. Hold every message you read, and hand them all back at the end."},
			{When: "reading leaves the DLQ as it was: every message, in order", Text: "Messages you hold are not in the queue for anyone else. When you have read n (or Get says the queue is empty), one Nack of the last delivery tag with multiple and requeue returns them all, in their places."},
			{When: "a replayed email starts over: retries 0, no x-death or other header", Text: "A copy of the message as it was keeps retries 5 and x-death: the worker would park it again on its first failure. Decode the job, set Retries to 0, and publish a new Publishing with the job's body and no headers."},
			{When: "each copy is confirmed before its original is acked", Text: "Ack the original only after publish returned nil (the broker confirmed the copy). Acked first, a failed publish loses the email; confirmed first, a crash in between leaves a duplicate, which the worker's idempotency handles."},
		},
	},
	{
		Dir: "14_atomic_claim", File: "claim.go", Lesson: "Q18",
		Title: "The atomic claim: one UPDATE decides which copy sends",
		Hints: []Hint{
			{When: "a copy of a message already SENT is skipped, not sent again", Text: "An UPDATE whose WHERE clause names only the id affects the row whatever its status: a copy that arrives after the message was sent claims it again. Say in the WHERE clause which status the row must be in for the claim to count."},
			{When: "two copies at once: exactly one claim wins, the other copy is skipped", Text: "A SELECT and then an UPDATE are two round trips: both copies read QUEUED before either writes, and both send. Make the check part of the change: one UPDATE … WHERE id = ? AND status = 'QUEUED'."},
			{When: "two copies at once: exactly one claim wins, the other copy is skipped", Text: "The database runs one UPDATE at a time on a row: after the first sets SENDING, the second's WHERE finds nothing. res.RowsAffected() says which copy you are: 1 won, 0 did not (return nil without sending)."},
			{When: "the mail API sends only while the row is SENDING (claimed, not yet SENT)", Text: "Mark SENT only after send returned nil. Marked first, a send that fails (or a worker that dies before it) leaves a row that says SENT for a greeting nobody got, and no copy will ever send it."},
			{When: "a failed send hands the row back (QUEUED): the next delivery claims and sends it", Text: "After a failed send the message comes back, but a row left SENDING cannot be claimed: put it back to QUEUED (only if it is SENDING) and return the error."},
			{When: "nothing lost: every task ends done", Text: "A copy that loses the claim sends nothing, so a message whose row a failed delivery left SENDING, or marked SENT before its send failed, is never sent by anyone: the log's lost line names it. SENT comes after a send that worked; after one that failed, the row goes back to QUEUED."},
			{Text: "The statements are SQLite's with ? placeholders, on the table status (id, kind, status, …): db.ExecContext(ctx, query, id) returns a sql.Result."},
		},
	},
	{
		Dir: "15_transient_permanent", File: "classify.go", Lesson: "Q19",
		Title: "Transient or permanent: back off 2–32 s, or the DLQ at once",
		Hints: []Hint{
			{When: "malformed JSON goes to the DLQ at once with a reason, never sent", Text: "json.Unmarshal's error is the verdict on a body that is not JSON: no retry will parse it. Check it before anything is sent and park the message in DLQ with the error as the reason."},
			{When: "a permanent error (400, 401, 404, 422) goes to the DLQ at once, with the error", Text: "A refusal the API answered (a *APIError, found with errors.As) is permanent unless its Status is 429 or 5xx: the same request gets the same answer. Park it at once, with err.Error() in the reason."},
			{When: "a permanent error (400, 401, 404, 422) goes to the DLQ at once, with the error", Text: "An error that carries no *APIError never got an answer (a reset connection, a timeout): that is the transient kind, as are 429 and the 5xx statuses."},
			{When: "retry n waits 2 s·2ⁿ (2, 4, 8, 16, 32 s) in the wait queue of that delay", Text: "flow.Requeue() puts the message back at once: RabbitMQ has no requeue with a delay, and a requeued delivery is the same attempt again. Retry through the wait queue whose TTL is the delay: WaitQueue(Backoff(n)) for retry n."},
			{When: "retry n waits 2 s·2ⁿ (2, 4, 8, 16, 32 s) in the wait queue of that delay", Text: "Backoff(n) doubles FirstDelay once per earlier retry: a left shift of a Duration by n doubles it n times. Retry n is d.Attempt-1: the first delivery failed, so the first retry waits 2 s."},
			{When: "a transient error (network, timeout, 429, 5xx): 5 retries, then the DLQ", Text: "Count retries, not attempts: d.Attempt-1 retries were spent before this one. Park when that reaches MaxRetries: the sixth attempt's failure parks, the fifth's still retries (the 32 s wait comes before the sixth)."},
			{When: "the run ends by itself", Text: "A retry into a wait queue the topology lacks (64 s: a sixth retry) is lost. Five retries, then the DLQ."},
		},
	},
	{
		Dir: "16_crash_redelivery", File: "survivor.go", Lesson: "Q20",
		Title: "After a crash: skip SENT, take over what was left SENDING",
		Hints: []Hint{
			{When: "a redelivered message whose row is SENT is skipped, not sent again", Text: "The broker redelivers every message the dead worker never acked, the ones it finished too. Only the store knows which went out: a claim that does not win (the row is not QUEUED) must not send."},
			{When: "nothing lost: every task ends done", Text: "A row left SENDING by a worker that died may or may not have been sent, and the store cannot tell. Skipping it loses the greeting whose send never happened; resending it sends the other one twice. Pick the resend: a redelivered copy whose row is SENDING is taken over and sent."},
			{When: "a message the dead worker claimed and never sent (SENDING) is taken over and sent", Text: "To take a row over, hand it back and claim it again: db.Requeue moves SENDING to QUEUED, and your next db.Claim wins it (and counts the attempt), so MarkSent finds it SENDING."},
			{When: "a copy not redelivered whose row a live worker holds SENDING is left to it", Text: "SENDING alone does not mean its worker died: the scheduler's second copy of a message a live worker is sending finds it SENDING too. Only the redelivered flag says the worker that held it is gone."},
			{When: "the mail API sends a message only while its row is SENDING", Text: "Send only after your claim won (or your take-over claimed the row); mark it SENT after the send returned nil."},
			{Text: "db.Get(ctx, d.ID) returns the row; row.Status is store.Queued, store.Sending, store.Sent … Compare it after a claim that did not win."},
		},
	},
}
