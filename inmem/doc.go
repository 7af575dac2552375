// Package inmem holds QueueLab's in-memory building blocks: named queues on
// buffered channels, worker loops on goroutines, delayed moves with
// time.AfterFunc, dead-lettering and a mock mailer. Lessons compose them
// explicitly so a student can read the mechanics; every block reports what
// it does to the lab.Stream and never prints.
//
// A System counts the work in flight (tasks sitting in queues or waiting on a
// timer, and the handler currently holding each one), so a lesson can wait
// until nothing is left to do instead of guessing a sleep.
package inmem
