package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

const brokerHelp = `Usage: qlab broker status|up|down|latency|clean|cluster [flags]

  status    which RabbitMQ broker qlab finds, its version, and how it found it
            (RABBITMQ_URL, then amqp://guest:guest@127.0.0.1:5672/)
  up        start a rabbitmq:4-management container with dockertest (needs
            Docker); --version 3.13 starts the old line instead
  down      remove that container
  latency   measure how late a TTL wait queue delivers (p50, p99)
  clean     delete what a killed run left under --prefix P (the prefix a run
            prints when it starts): the queues and exchanges the broker lessons
            declare, each only if it is there and no consumer is attached;
            --created DIR: what ended test processes recorded (make test)
  cluster   a three-node cluster: up, down, status, kill NODE, revive NODE
            (qlab broker cluster --help)`

// discoverOptions is how qlab looks for a broker; tests point DefaultURL
// at a closed port to see the no-broker path for real.
var discoverOptions = rabbit.DiscoverOptions{Docker: true}

func cmdBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "cluster" {
		return cmdBrokerCluster(ctx, args[1:], stdout, stderr)
	}
	fs := newFlagSet("broker", brokerHelp)
	ttl := fs.Duration("ttl", time.Second, "latency: the wait queue's TTL (1ms..10m)")
	n := fs.Int("n", 200, "latency: messages to measure (1..10000)")
	gap := fs.Duration("gap", 5*time.Millisecond, "latency: pause between publishes (0..10s)")
	version := fs.String("version", rabbit.DefaultDockerVersion, "up: the RabbitMQ line of the image (4, 4.3, 3.13)")
	var clean cleanFlags
	clean.register(fs)
	verbose := verboseFlag(fs)
	pos, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("broker takes one of status, up, down, latency, clean (see qlab broker --help)")
	}
	switch pos[0] {
	case "status":
		opts := discoverOptions
		opts.Docker = false // status looks; it never starts anything
		b, err := rabbit.Discover(ctx, opts)
		if err != nil {
			return withDetails(err, *verbose)
		}
		fmt.Fprintln(stdout, b)
		printVersionNotes(stdout, b.Version)
		return nil
	case "up":
		return brokerUp(ctx, fs, *version, stdout)
	case "down":
		err := rabbit.DockerDown(ctx)
		if errors.Is(err, rabbit.ErrNoDocker) {
			return fmt.Errorf("broker down needs Docker: %v; there is no qlab container to remove "+
				"(a broker started with rabbitmq-server stops with: rabbitmqctl stop)", err)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "removed container "+rabbit.ContainerName)
		return nil
	case "latency":
		if err := checkLatencyFlags(*n, *ttl, *gap); err != nil {
			return err
		}
		return withDetails(brokerLatency(ctx, stdout, *ttl, *n, *gap), *verbose)
	case "clean":
		return withDetails(brokerClean(ctx, stdout, clean), *verbose)
	}
	return usagef("unknown broker command %q: use status, up, down, latency or clean", pos[0])
}

// The bounds of qlab broker latency's flags: enough for any figure a
// lesson quotes, small enough that a typo cannot hold a queue of a
// million messages, or the terminal, for days.
const (
	maxLatencyN     = 10_000
	maxLatencyTTL   = 10 * time.Minute
	maxLatencyGap   = 10 * time.Second
	maxLatencyTotal = 30 * time.Minute // --ttl plus --n × --gap: how long the measurement runs
)

// checkLatencyFlags refuses flags outside the bounds, with the bound.
func checkLatencyFlags(n int, ttl, gap time.Duration) error {
	switch {
	case n <= 0 || n > maxLatencyN:
		return usagef("latency --n must be 1..%d, got %d", maxLatencyN, n)
	case ttl < time.Millisecond || ttl > maxLatencyTTL:
		return usagef("latency --ttl must be 1ms..%v (x-message-ttl counts whole milliseconds), got %v", maxLatencyTTL, ttl)
	case gap < 0 || gap > maxLatencyGap:
		return usagef("latency --gap must be 0..%v, got %v", maxLatencyGap, gap)
	case ttl+time.Duration(n)*gap > maxLatencyTotal:
		return usagef("latency would run for %v (--ttl + --n × --gap); at most %v: lower --n or --gap",
			ttl+time.Duration(n)*gap, maxLatencyTotal)
	}
	return nil
}

// brokerUp starts a container of the line version unless a broker already
// answers: of that line, or of any when --version was not given.
func brokerUp(ctx context.Context, fs *flag.FlagSet, version string, stdout io.Writer) error {
	image, err := rabbit.DockerImage(version)
	if err != nil {
		return usagef("broker up --version: %v", err)
	}
	opts := discoverOptions
	opts.Docker = false
	if b, err := rabbit.Discover(ctx, opts); err == nil {
		if !flagSet(fs, "version") || b.Version == version || strings.HasPrefix(b.Version, version+".") {
			fmt.Fprintf(stdout, "a broker already answers, nothing to start: %s\n", b)
			return nil
		}
		return fmt.Errorf("a RabbitMQ %s broker already answers at %s; %s would need its port 5672: "+
			"stop that broker first, or point RABBITMQ_URL at a RabbitMQ %s", b.Version, rabbit.Redact(b.URL), image, version)
	}
	b, err := rabbit.DockerUpVersion(ctx, version)
	if errors.Is(err, rabbit.ErrNoDocker) {
		return fmt.Errorf("broker up needs Docker: %v; without Docker, start RabbitMQ with `rabbitmq-server -detached` "+
			"(Debian package rabbitmq-server) or point RABBITMQ_URL at one", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\nmanagement UI: http://127.0.0.1:15672 (guest/guest); stop it with: qlab broker down\n", b)
	printVersionNotes(stdout, b.Version)
	return nil
}

// flagSet reports whether flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// printVersionNotes lists, on a 4.x broker, what its line does that the
// lessons use and 3.10.8 does not, each with its source.
func printVersionNotes(w io.Writer, version string) {
	notes := rabbit.VersionNotes(version)
	if len(notes) == 0 {
		return
	}
	fmt.Fprintf(w, "What RabbitMQ %s does that the lessons use (3.10.8 does none of it):\n", version)
	for _, n := range notes {
		text := fmt.Sprintf("since %s: %s [%s]", n.Since, n.Text, n.Source)
		for i, line := range render.Wrap(text, 76, "") {
			fmt.Fprintln(w, map[bool]string{true: "  - ", false: "    "}[i == 0]+line)
		}
	}
}

// brokerLatency measures the wait-queue delay error on private queues.
func brokerLatency(ctx context.Context, stdout io.Writer, ttl time.Duration, n int, gap time.Duration) error {
	b, err := rabbit.Discover(ctx, discoverOptions)
	if err != nil {
		return err
	}
	s, err := rabbit.Open(ctx, b.URL, rabbit.RunNames(), lab.NewClock(1), logger(os.Stderr))
	if err != nil {
		return err
	}
	defer s.Close(context.WithoutCancel(ctx))
	ctx, cancel := context.WithTimeout(ctx, ttl+time.Duration(n)*(gap+100*time.Millisecond)+10*time.Second)
	defer cancel()
	stats, err := rabbit.MeasureWaitDelay(ctx, s, ttl, n, gap)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, b)
	fmt.Fprintln(stdout, stats)
	return nil
}
