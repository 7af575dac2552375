package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab/created"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/cluster"
	"github.com/queuelab/qlab/store/sqlstore"
)

// createdWait is how long clean --created waits for a process that
// recorded something to end (one still winding down after Ctrl-C) before
// it leaves that process's record for the next run.
const createdWait = 10 * time.Second

// brokerCleanCreated deletes what the ended processes recorded in dir
// (lab/created) left: their queues and exchanges on the local broker and
// their PostgreSQL schemas, then their records. A record of a process
// still running is kept. make test runs it when the tests end, however
// they end, and at its next start for a run killed outright.
func brokerCleanCreated(ctx context.Context, stdout io.Writer, dir string, dryRun bool) error {
	recs, err := created.Read(dir)
	if err != nil {
		return err
	}
	for end := time.Now().Add(createdWait); slices.ContainsFunc(recs, created.Record.Alive) && time.Now().Before(end); {
		time.Sleep(200 * time.Millisecond)
	}
	var ended, running []created.Record
	var prefixes, unsettled, schemas []string
	for _, r := range recs {
		if r.Alive() {
			running = append(running, r)
			continue
		}
		ended = append(ended, r)
		prefixes = append(prefixes, r.Prefixes...)
		unsettled = append(unsettled, r.Unsettled()...)
		schemas = append(schemas, r.Schemas...)
	}
	res, brokerErr := cleanCreatedQueues(ctx, prefixes, unsettled, dryRun)
	dropped, storeErr := cleanCreatedSchemas(ctx, schemas, dryRun)
	writeCreatedCleaned(stdout, dir, res, dropped, running, dryRun)
	if !dryRun {
		// A test's own nodes whose owner died before their watcher
		// started (killed while they booted): at once, not at the next
		// test's start.
		for _, node := range cluster.ReapOrphans(cluster.TestPrefixes...) {
			printWrapped(stdout, "  ", "removed node %s: the test that started it has ended", node)
		}
	}
	if n := len(res.Deleted) + len(res.Exchanges) + len(dropped); n == 0 && len(ended) > 0 {
		printWrapped(stdout, "  ", "nothing left by the %d ended test processes that recorded %d prefixes and %d schemas in %s",
			len(ended), len(prefixes), len(schemas), dir)
	}
	if err := cmp.Or(brokerErr, storeErr); err != nil || dryRun {
		return err // the records stay for the next try
	}
	for _, r := range ended {
		if err := os.Remove(r.Path); err != nil {
			return err
		}
	}
	return nil
}

// cleanCreatedQueues deletes the queues and exchanges under prefixes on
// the broker: the local node's listing (rabbitmqctl) finds every name
// under them. Where rabbitmqctl cannot list them (a broker in a
// container, the 4.3 node in its chroot), the names the lessons declare
// are looked for under each of unsettled (Clean; slower, and a name no
// lesson declares stays): the prefixes whose sessions did not all close
// clean (created.Record.Settled). On 2026-11-28 a busy run's 870
// prefixes took 70 s to look under that way; most runs close clean.
// Without a broker nothing was declared to delete.
func cleanCreatedQueues(ctx context.Context, prefixes, unsettled []string, dryRun bool) (rabbit.CleanResult, error) {
	if len(prefixes) == 0 {
		return rabbit.CleanResult{}, nil
	}
	opts := discoverOptions
	opts.Docker = false // it cleans; it never starts a broker
	b, err := rabbit.Discover(ctx, opts)
	if err != nil {
		return rabbit.CleanResult{}, nil
	}
	listCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	queues, exchanges, err := rabbit.ListLocal(listCtx)
	var res rabbit.CleanResult
	if err != nil {
		res, err = cleanEachPrefix(ctx, b.URL, unsettled, dryRun)
	} else {
		res, err = rabbit.CleanListed(ctx, b.URL, prefixes, queues, exchanges, dryRun)
	}
	if err != nil {
		return res, err
	}
	// The 4.3 broker the tests also run on (its node is in a chroot,
	// which rabbitmqctl here does not reach): the lessons' names.
	if url43 := os.Getenv(env43); url43 != "" && url43 != b.URL {
		more, err := cleanEachPrefix(ctx, url43, unsettled, dryRun)
		res.Deleted = append(res.Deleted, more.Deleted...)
		res.Exchanges = append(res.Exchanges, more.Exchanges...)
		res.InUse = append(res.InUse, more.InUse...)
		if err != nil {
			return res, fmt.Errorf("on %s: %w", env43, err)
		}
	}
	return res, nil
}

// env43 names the RabbitMQ 4.3 broker of the tests (rabbittest.Env43).
const env43 = "QLAB_RABBITMQ43_URL"

// cleanCreatedSchemas drops those of schemas that are in the database at
// QLAB_DATABASE_URL and that no connection uses.
func cleanCreatedSchemas(ctx context.Context, schemas []string, dryRun bool) ([]string, error) {
	url := os.Getenv(sqlstore.EnvURL)
	if len(schemas) == 0 || !strings.HasPrefix(url, "postgres") {
		return nil, nil
	}
	dropped, _, err := sqlstore.DropDeadSchemas(ctx, url, func(s string) bool { return slices.Contains(schemas, s) }, dryRun)
	return dropped, err
}

// writeCreatedCleaned says what clean --created deleted, one line each,
// and which processes' records it kept; nothing when there was nothing.
func writeCreatedCleaned(w io.Writer, dir string, res rabbit.CleanResult, dropped []string, running []created.Record, dryRun bool) {
	verb := "deleted"
	if dryRun {
		verb = "would delete"
	}
	n := len(res.Deleted) + len(res.Exchanges) + len(dropped)
	if n > 0 {
		printWrapped(w, "  ", "%s what ended test processes left (they did not clean up: "+
			"killed, interrupted or failed): %d queues, %d exchanges, %d schemas",
			verb, len(res.Deleted), len(res.Exchanges), len(dropped))
	}
	for _, q := range res.Deleted {
		printWrapped(w, "    ", "  queue %s (%d ready)", q.Name, q.Messages)
	}
	for _, x := range res.Exchanges {
		printWrapped(w, "    ", "  exchange %s", x)
	}
	for _, s := range dropped {
		printWrapped(w, "    ", "  schema %s", s)
	}
	for _, q := range res.InUse {
		printWrapped(w, "  ", "left queue %s: %d consumers attached", q.Name, q.Consumers)
	}
	for _, r := range running {
		printWrapped(w, "  ", "left what process %d recorded in %s: it still runs %s after the tests",
			r.Pid, dir, createdWait)
	}
}

// cleanEachPrefix runs Clean under each prefix with every lesson's
// topology and the run's hold queue (<run>.foreign), and sums what it
// found, in the prefixes' order. Each prefix costs a connection and a
// passive declare per name, so it cleans cleanAtOnce prefixes at a time:
// one after another, make test's 890 prefixes took 40 s.
func cleanEachPrefix(ctx context.Context, url string, prefixes []string, dryRun bool) (rabbit.CleanResult, error) {
	var sum rabbit.CleanResult
	topos, err := cleanFlags{}.topologies()
	if err != nil {
		return sum, err
	}
	topos = append(topos, flow.Topology{Queues: []flow.Queue{{Name: "foreign"}}})
	results := make([]rabbit.CleanResult, len(prefixes))
	errs := make([]error, len(prefixes))
	slots := make(chan struct{}, cleanAtOnce)
	var wg sync.WaitGroup
	for i, p := range prefixes {
		names, err := rabbit.PersonNames(p)
		if err != nil {
			continue // not a prefix a run declares under
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			results[i], errs[i] = rabbit.Clean(ctx, url, names, topos, dryRun)
		})
	}
	wg.Wait()
	var first error // the report lists all it deleted, past a failed prefix too
	for i, res := range results {
		sum.Deleted = append(sum.Deleted, res.Deleted...)
		sum.Exchanges = append(sum.Exchanges, res.Exchanges...)
		sum.InUse = append(sum.InUse, res.InUse...)
		if err := errs[i]; first == nil && err != nil && !errors.Is(err, rabbit.ErrInUse) {
			first = fmt.Errorf("cleaning under %s: %w", prefixes[i], err)
		}
	}
	return sum, first
}

// cleanAtOnce is how many prefixes cleanEachPrefix cleans at a time:
// connections to the broker, each busy with its passive declares.
const cleanAtOnce = 16
