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
}
