// Command qlab runs QueueLab's lessons: `qlab list`, `qlab run N`. It is
// thin on purpose: it parses flags, picks a lesson, a backend and a
// renderer, and leaves the rest to the lessons, inmem, rabbit and render
// packages.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// SIGTERM too, so a stopped RabbitMQ run still deletes its queues.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// A closed stdout (qlab run 10 --json | head -1) must not kill the
	// process mid-run: with SIGPIPE ignored the write returns EPIPE, and
	// watchedOutput ends the run cleanly.
	signal.Ignore(syscall.SIGPIPE)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
