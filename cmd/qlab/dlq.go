package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

const dlqHelp = `Usage:
  qlab dlq inspect QUEUE [--n N] [--prefix NAME]
  qlab dlq replay QUEUE --to QUEUE [--reset-retries] [--n N] [--prefix NAME]
  qlab dlq purge QUEUE --yes [--prefix NAME]

Work a dead-letter queue on the broker (any queue, not only the lab's).

  inspect   print the first N messages: properties, headers, x-death, body.
            Every message stays where it was, in its order: qlab takes them
            with basic.get and never acknowledges them, so closing the channel
            hands them back (the broker then marks them redelivered). Unlike
            the management API's ackmode ack_requeue_false, which removes
            what it shows.
  replay    move messages to the --to queue, one at a time: publish a copy
            (confirmed by the broker), then acknowledge the original.
            Interrupted, it loses nothing: a message not yet confirmed stays
            in QUEUE; one confirmed but not yet acknowledged is in both
            queues (a duplicate, not a loss). --reset-retries gives each copy
            a fresh retry budget: a JSON body's "retries" becomes 0, and the
            qlab-retries and x-death headers are dropped.
  purge     delete every ready message in QUEUE; refuses without --yes.

QUEUE is the broker's name (rabbitmqctl list_queues name). With --prefix NAME
it is NAME.QUEUE, as qlab run --names exact --prefix NAME declared it (a run's
private prefix such as qlab-3f9a1c works the same way); --to takes the same
prefix. A queue that does not exist is refused (exit 1), found with a passive
declare on a channel of its own.`

func cmdDLQ(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("dlq", dlqHelp)
	n := fs.Int("n", 0, "how many messages: inspect shows the first 10 when 0, at most 1000; replay moves all that were ready when it started when 0")
	to := fs.String("to", "", "replay: the queue to move messages to")
	reset := fs.Bool("reset-retries", false, `replay: set a JSON body's "retries" to 0 and drop the qlab-retries and x-death headers`)
	yes := fs.Bool("yes", false, "purge: yes, delete every message in the queue")
	prefix := fs.String("prefix", "", "read QUEUE (and --to) as NAME.QUEUE: the names qlab run --names exact --prefix NAME declares")
	verbose := verboseFlag(fs)
	pos, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("dlq takes an action (inspect, replay or purge) and a queue name (see qlab dlq --help)")
	}
	action, queue := pos[0], pos[1]
	if err := checkDLQFlags(fs, action, queue, *n, *to, *yes, *prefix); err != nil {
		return err
	}
	name := func(q string) string {
		if *prefix == "" {
			return q
		}
		return *prefix + "." + q
	}
	conn, closeConn, err := dlqConnect(ctx, *verbose)
	if err != nil {
		return err
	}
	defer closeConn()
	switch action {
	case "inspect":
		return dlqInspect(ctx, conn, name(queue), cmp.Or(*n, 10), stdout)
	case "replay":
		return dlqReplay(ctx, conn, name(queue), name(*to), rabbit.ReplayOptions{N: *n, ResetRetries: *reset}, stdout)
	default:
		removed, err := rabbit.Purge(ctx, conn, name(queue))
		if err == nil {
			fmt.Fprintf(stdout, "purged %s: %s deleted\n", name(queue), render.Count(removed, "message"))
		}
		return err
	}
}

// maxInspect bounds dlq inspect --n: it holds every message it read
// unacknowledged on one channel until it is done, and prints each.
const maxInspect = 1000

// dlqCloseWait bounds closing the connection at the end: a broker that
// stopped answering does not answer connection.close either, and
// amqp091-go would wait for its close-ok until the heartbeat gives up.
const dlqCloseWait = 3 * time.Second

// checkDLQFlags refuses flags that do not fit the action, before any
// broker is touched.
func checkDLQFlags(fs *flag.FlagSet, action, queue string, n int, to string, yes bool, prefix string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	only := func(flag, act string) error {
		if set[flag] && action != act {
			return usagef("--%s goes with dlq %s", flag, act)
		}
		return nil
	}
	switch action {
	case "inspect", "replay", "purge":
	default:
		return usagef("dlq action must be inspect, replay or purge, got %q", action)
	}
	for _, err := range []error{only("to", "replay"), only("reset-retries", "replay"), only("yes", "purge")} {
		if err != nil {
			return err
		}
	}
	switch {
	case n < 0:
		return usagef("--n must be 0 or more, got %d", n)
	case action == "inspect" && n > maxInspect:
		return usagef("--n for dlq inspect is at most %d, got %d: it prints every message and holds them all unacknowledged; dlq replay moves any number", maxInspect, n)
	case set["n"] && action == "purge":
		return usagef("--n goes with dlq inspect or replay (purge deletes every message)")
	case action == "replay" && to == "":
		return usagef("dlq replay needs --to QUEUE: where to move the messages")
	case action == "replay" && to == queue:
		return usagef("dlq replay needs two different queues: replaying %s into itself would loop", queue)
	case action == "purge" && !yes:
		return usagef("dlq purge deletes every message in the queue and cannot be undone; add --yes if you mean it")
	}
	if prefix != "" {
		if err := rabbit.CheckPrefix(prefix); err != nil {
			return usagef("--prefix: %v", err)
		}
	}
	return nil
}

// dlqConnect finds the broker as every command does and opens a
// connection to it.
func dlqConnect(ctx context.Context, verbose bool) (*amqp.Connection, func(), error) {
	opts := discoverOptions
	opts.Docker = false // dlq works on a broker that has the queue; it never starts one
	b, err := rabbit.Discover(ctx, opts)
	if err != nil {
		return nil, nil, withDetails(err, verbose)
	}
	s, err := rabbit.Open(ctx, b.URL, rabbit.Names{}, lab.NewClock(1), slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, err
	}
	closeConn := func() {
		closed := make(chan struct{})
		go func() {
			_ = s.Close(context.WithoutCancel(ctx))
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(dlqCloseWait): // the process ends, and the socket with it
		}
	}
	return s.Connection(), closeConn, nil
}

func dlqInspect(ctx context.Context, conn *amqp.Connection, queue string, n int, w io.Writer) error {
	msgs, err := rabbit.Inspect(ctx, conn, queue, n)
	if err != nil {
		// Show what was read before the broker stopped answering: those
		// are the queue's first messages, left in place all the same.
		for i, d := range msgs {
			writeMessage(w, i+1, d)
		}
		if len(msgs) > 0 {
			return fmt.Errorf("%w; the %s above were read before it", err, render.Count(len(msgs), "message"))
		}
		return err
	}
	depth, err := rabbit.QueueDepth(ctx, conn, queue)
	if err != nil {
		return err
	}
	for i, d := range msgs {
		writeMessage(w, i+1, d)
	}
	printWrapped(w, "  ", "%s: showed %d of %s; all left in place, in order (read with basic.get, never acknowledged)",
		queue, len(msgs), render.Count(depth, "ready message"))
	return nil
}

// writeMessage prints one message: its properties, its x-death entries,
// its other headers (sorted) and its body.
func writeMessage(w io.Writer, pos int, d amqp.Delivery) {
	printWrapped(w, "   ", "#%d message-id=%q app-id=%q content-type=%q redelivered=%v", pos, d.MessageId, d.AppId, d.ContentType, d.Redelivered)
	for _, death := range rabbit.ReadDeaths(d.Headers) {
		printWrapped(w, "      ", "   x-death: queue=%s reason=%s count=%d exchange=%q routing-keys=%s",
			death.Queue, death.Reason, death.Count, death.Exchange, strings.Join(death.RoutingKeys, ","))
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range d.Headers {
			if k != "x-death" && !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		printWrapped(w, "      ", "   header %s=%v", k, d.Headers[k])
	}
	printWrapped(w, "      ", "   body: %s", d.Body)
}

func dlqReplay(ctx context.Context, conn *amqp.Connection, from, to string, opts rabbit.ReplayOptions, w io.Writer) error {
	res, err := rabbit.Replay(ctx, conn, from, to, opts)
	for i, d := range res.Moved {
		printWrapped(w, "   ", "#%d message-id=%q moved to %s", i+1, d.MessageId, to)
	}
	if err != nil {
		return err
	}
	note := ""
	if opts.ResetRetries {
		note = "; retries reset on " + render.Count(res.Reset, "message")
	}
	printWrapped(w, "  ", "replayed %s from %s to %s (each copy confirmed before its original was acknowledged)%s", render.Count(len(res.Moved), "message"), from, to, note)
	return nil
}
