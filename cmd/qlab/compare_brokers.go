package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/compare"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// brokerURLs collects compare's --broker flags. Its String never shows a
// password: the flag package prints it in errors and the help.
type brokerURLs []string

func (b *brokerURLs) String() string {
	if b == nil {
		return ""
	}
	var out []string
	for _, u := range *b {
		out = append(out, rabbit.Redact(u))
	}
	return strings.Join(out, ", ")
}

// Set adds one URL. It is checked later (checkBrokerURL): the flag
// package would quote a refused value, password and all.
func (b *brokerURLs) Set(v string) error {
	*b = append(*b, strings.TrimSpace(v))
	return nil
}

// checkBrokerURL refuses an empty URL or one that is no AMQP URL, so the
// command line is wrong before anything is dialled.
func checkBrokerURL(u string) error {
	if u == "" {
		return usagef("--broker needs an AMQP URL, e.g. amqp://guest:guest@127.0.0.1:5672/")
	}
	if _, err := amqp.ParseURI(u); err != nil {
		return usagef("--broker %s is not an AMQP URL (amqp://user:password@host:port/vhost)", rabbit.Redact(u))
	}
	return nil
}

// compareOutput is the form compare prints in.
type compareOutput struct{ json, markdown bool }

// compareBrokers is qlab compare N --broker A --broker B: lesson l on two
// brokers, probed first so the tables can name their versions.
func compareBrokers(ctx context.Context, stdout io.Writer, l lesson.Lesson, urls brokerURLs, out compareOutput, cfg compare.BrokerConfig, verbose bool) error {
	for _, u := range urls {
		if err := checkBrokerURL(u); err != nil {
			return err
		}
	}
	switch {
	case len(urls) != 2:
		return usagef("--broker takes two brokers to compare, given %d: qlab compare %d --broker URL --broker URL", len(urls), l.Number())
	case urls[0] == urls[1]:
		return usagef("the two --broker URLs are the same broker (%s): name two brokers", rabbit.Redact(urls[0]))
	case l.Runner(lab.Rabbit) == nil:
		return usagef("lesson %d runs in memory only: there is nothing to run on a broker", l.Number())
	case l.Cluster:
		return usagef("lesson %d runs on the cluster qlab broker cluster up starts, which --broker cannot name", l.Number())
	}
	for i, u := range urls {
		b, err := rabbit.Probe(ctx, u, "--broker")
		if err != nil {
			return withDetails(fmt.Errorf("--broker %s: %w", rabbit.Redact(u), err), verbose)
		}
		cfg.Brokers[i] = b
	}
	rep, err := compare.RunBrokers(ctx, l, cfg)
	if err != nil {
		return err
	}
	labels := compare.Labels(cfg.Brokers)
	switch {
	case out.json:
		for i, t := range rep.Tables {
			rep.Tables[i] = compare.Unwrapped(t)
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case out.markdown:
		fmt.Fprintf(stdout, "## %s · %s\n\n%s vs %s · speed %g× · %s\n\n", l.ID, l.Title, labels[0], labels[1], cfg.Speed, runsEach(rep.Repeat))
		for _, t := range rep.Tables {
			compare.Unwrapped(t).Markdown(stdout)
		}
	default:
		fmt.Fprintf(stdout, "%s · %s\n%s vs %s · speed %g× · %s\n", l.ID, l.Title, rep.Brokers[0], rep.Brokers[1], cfg.Speed, runsEach(rep.Repeat))
		layout := render.LayoutFor(terminalWidth(stdout))
		for _, t := range rep.Tables {
			fmt.Fprintln(stdout)
			writeCompared(stdout, t, layout)
		}
	}
	return nil
}
