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
		Title: "Retry after a delay with time.AfterFunc",
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
		Dir: "18_metric_types", File: "metrics.go", Lesson: "Q22",
		Title: "Metrics: a histogram, two counters and a gauge, labelled by queue",
		Hints: []Hint{
			{When: "the four metrics are served from the registry New is given", Text: "The checker serves the registry it passes to New, and only that one: register each metric with reg.MustRegister. prometheus.MustRegister and promauto put them on the global registry, which nothing here serves (and a second run registers them twice)."},
			{When: "a duration is a histogram: queue_message_consume_duration_seconds", Text: "A counter of seconds gives a total (and, beside a count of attempts, an average); a histogram's buckets also give the 99th percentile, and add up across workers. prometheus.NewHistogramVec with HistogramOpts{Name, Help, Buckets} and Observe each attempt."},
			{When: "a total is a counter: queue_message_ack_total, queue_message_nack_total", Text: "A _total only goes up: a counter (prometheus.NewCounterVec, Inc). A gauge shows the same number, but Prometheus's rate() and increase() assume a counter: they read a drop as a restart, and a gauge has no such meaning."},
			{When: "a level is a gauge, it goes down as well as up: queue_depth_messages", Text: "A depth goes down when a worker takes a message: a counter cannot (its Add panics on a negative value). prometheus.NewGaugeVec, and Set the depth you are given."},
			{When: "one label, the queue: never a task id or a body (bounded series)", Text: "Every distinct label value is a series of its own, kept for as long as the process lives: a task id makes one per message, without end. Label by QueueLabel alone (a few queues); find a slow task in the log or a trace, not in /metrics."},
			{When: "acks and nacks count the attempts, one each, per queue", Text: "Handled is called once per attempt: one ack when err is nil, one nack otherwise, on the series of d.Queue (each queue counts its own)."},
			{When: "the consume duration: one observation per attempt, in seconds", Text: "A metric named _seconds holds seconds (Prometheus's base unit): took.Seconds(), a float64, not took.Milliseconds(). Observe once per Handled call, ack or nack alike."},
			{When: "the depth reads what the queue holds now: set, not added up", Text: "Depth hands you what the queue holds now, not a change: Set it. Add sums every reading, and the gauge climbs for ever."},
			{Text: "Each *Vec takes its label names when it is made ([]string{QueueLabel}) and a value per call: WithLabelValues(d.Queue)."},
		},
	},
	{
		Dir: "19_batch_settle", File: "batch.go", Lesson: "Q23",
		Title: "A batching consumer that settles each message on its own",
		Hints: []Hint{
			{When: "one decision per message, in order: ack, retry or park", Text: "Return exactly len(ds) decisions, in the order of ds: a message left without one is requeued by the backend, straight back, and never settles."},
			{When: "an acked user is in the users table: nothing acked that was not stored", Text: "An ack tells the broker to forget the message: ack only a user the insert stored. When the insert returns an error, no row of the batch was stored."},
			{When: "the database away: the whole batch retries, parked after 3 attempts", Text: "An error from the insert itself (store.ErrUnavailable: the database away) is about the batch, not one row: every message retries via RetryQueue, and at d.Attempt >= MaxAttempts parks in DLQ with the error as the reason. A retry in 10 s may well find the database back."},
			{When: "a taken email is parked at once, the email in the reason", Text: "A unique violation fails every retry the same way: retrying it three times only delays the DLQ (and, with the seed's batch insert, takes the batch with it). users.InsertUsersSkipping inserts the free rows and returns the indexes of the taken ones: park those at once, saying which email is taken."},
			{When: "one bad row does not fail its batch: the others are stored and acked", Text: "Broadway's handle_batch returns every message, each acknowledged by its own status: Message.failed marks the bad one, the rest are acked (a raise fails the whole batch). An insert that fails whole (InsertUsers) cannot tell you which: insert so that a taken row is skipped, not fatal, and ack every index it did not skip."},
			{When: "a batch with no bad row is one insert statement", Text: "Inserting each user on its own settles each on its own, but a batch of 1000 is 1000 round trips to the database: the batch is there to make it one. One InsertUsersSkipping call per batch does both."},
			{Text: "skipped holds indexes into the slice you inserted, in increasing order: with one user per message, in the order of ds, index i is ds[i]."},
		},
	},
	{
		Dir: "20_dlq_bounded", File: "dlq_consumer.go", Lesson: "Q24",
		Title: "A bounded DLQ consumer: wait between tries, then park with the reason",
		Hints: []Hint{
			{When: "nothing lost: every task ends done or dead", Text: "A dropped (discarded) message is gone: nobody can ever see what was sent, or fix the client that sent it. Park it in Parked instead: it costs nothing there, since nothing consumes that queue."},
			{When: "an acked user is in the users table", Text: "Ack only when insert returned nil: an ack tells the broker to forget the message, and a user acked after a failed insert is lost."},
			{When: "never requeued: a failed try waits 10 s in raffle_dlq_retry_10s", Text: "A nack with requeue puts the message straight back in raffle_dlq (on RabbitMQ in its old place, at the head; in memory at the tail): the consumer has it again a moment later, as fast as the database can refuse it. flow.Retry(DLQWait, err) rejects it into the wait queue instead, whose 10 s TTL sends it back."},
			{When: "a body no retry can mend is parked in raffle_parked at once", Text: "A malformed body fails the same way on every try: test errors.Is(err, ErrMalformed) before counting tries, and park it at once."},
			{When: "a user is parked after exactly 3 failed tries, not before", Text: "d.Attempt counts the tries, this one included: 1 on the first. The try that fails with d.Attempt == MaxTries is the last; before it, retry. Compare with >=, and with MaxTries itself."},
			{When: "every park says why: the error of its last try", Text: "The reason is all a person opening raffle_parked has: put the error in it (fmt.Sprintf with %v), so an outage reads differently from a broken body."},
			{When: "one insert per delivery", Text: "Each call of insert is a try of its own (a round trip to the database): call it once per delivery and decide on the error it returned."},
			{Text: "The order that works: ack on nil; park a malformed body; park at the last try; otherwise retry through DLQWait. A requeue never appears."},
		},
	},
}
