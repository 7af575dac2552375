package rabbit

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
)

// A killed run cannot delete its queues, and AMQP cannot list a broker's
// queues. What the lab can do is ask for the names it would have
// declared: Clean passively declares each queue and exchange of the given
// topologies under a prefix and deletes the ones that exist. A manifest
// written on the broker at declare time would be one more thing a killed
// run leaves behind; the names come from the topologies the lessons
// declare, so they cannot drift from them.

// CleanResult is what Clean found under a prefix, in topology order.
type CleanResult struct {
	Deleted []CleanedQueue // queues deleted (with DryRun: that would be)
	InUse   []CleanedQueue // queues left because a consumer is attached: a run still going
	Absent  int            // names of the topologies that were not on the broker
	// Exchanges are the exchanges deleted (with DryRun: that would be).
	Exchanges []string
}

// CleanedQueue is one queue Clean found: its broker name, and the ready
// messages and consumers it had.
type CleanedQueue struct {
	Name      string
	Messages  int
	Consumers int
}

// ErrInUse is wrapped by Clean's error when a queue under the prefix has
// a consumer: a run with that prefix is still going, so Clean deletes
// nothing (a wait queue or a DLQ of that run has no consumer of its own,
// yet is just as much in use).
var ErrInUse = errors.New("a run with this prefix is still going")

// Clean deletes, on the broker at url, every queue and exchange of topos
// that exists under names (a killed run's leftovers). If a run still
// holds its claim on the names (see claim.go), or any of those queues has
// a consumer, a run with that prefix is still going and owns all of them:
// Clean deletes nothing and its error wraps ErrInUse. With
// dryRun it deletes nothing and reports what it would delete. A passive
// declare of a missing queue closes its channel, so each name is checked
// on a channel of its own.
func Clean(ctx context.Context, url string, names Names, topos []flow.Topology, dryRun bool) (CleanResult, error) {
	var res CleanResult
	if names.Prefix == "" {
		return res, errors.New("clean needs a prefix: without one it would delete the seed's own names, which may be anyone's")
	}
	conn, err := dial(ctx, url, nil)
	if err != nil {
		return res, err
	}
	defer closeWithin(conn)
	if held, err := claimHeld(ctx, conn, names); err != nil || held {
		if err == nil && !dryRun {
			err = fmt.Errorf("%w: it holds its claim on the names (%s); clean deletes nothing under %s while that run goes on",
				ErrInUse, claimName(names), names.Prefix)
		}
		if err != nil {
			return res, err
		}
	}
	queues, exchanges := cleanNames(names, topos)
	for _, name := range queues {
		if err := findQueue(ctx, conn, name, &res); err != nil {
			return res, err
		}
	}
	for _, name := range exchanges {
		if err := findExchange(ctx, conn, name, &res); err != nil {
			return res, err
		}
	}
	switch {
	case len(res.InUse) > 0:
		q := res.InUse[0]
		err := fmt.Errorf("%w: queue %s has %d consumers; clean deletes nothing under %s while that run goes on",
			ErrInUse, q.Name, q.Consumers, names.Prefix)
		if dryRun {
			return res, nil // the listing says so
		}
		res.Deleted, res.Exchanges = nil, nil
		return res, err
	case dryRun:
		return res, nil
	}
	return res, deleteFound(ctx, conn, res)
}

// cleanNames lists the broker names of topos' queues and exchanges under
// names, each once, in topology order.
func cleanNames(names Names, topos []flow.Topology) (queues, exchanges []string) {
	seen := map[string]bool{}
	for _, t := range topos {
		for _, q := range t.Queues {
			if name := names.Of(q.Name); !seen[name] {
				seen[name] = true
				queues = append(queues, name)
			}
		}
	}
	for _, t := range topos {
		for _, x := range t.Exchanges {
			if name := names.Of(x.Name); !seen["exchange "+name] {
				seen["exchange "+name] = true
				exchanges = append(exchanges, name)
			}
		}
	}
	return queues, exchanges
}

// findQueue records broker queue name in res: absent, in use (a consumer
// is attached) or to delete.
func findQueue(ctx context.Context, conn *amqp.Connection, name string, res *CleanResult) error {
	q, err := inspectOn(ctx, conn, name)
	switch {
	case isNotFound(err):
		res.Absent++
		return nil
	case err != nil:
		return fmt.Errorf("checking queue %s: %w", name, err)
	}
	found := CleanedQueue{Name: name, Messages: q.Messages, Consumers: q.Consumers}
	if q.Consumers > 0 {
		res.InUse = append(res.InUse, found)
	} else {
		res.Deleted = append(res.Deleted, found)
	}
	return nil
}

// findExchange records broker exchange name in res: absent or to delete.
func findExchange(ctx context.Context, conn *amqp.Connection, name string, res *CleanResult) error {
	err := onChannel(ctx, conn, func(ch *amqp.Channel) error {
		return ch.ExchangeDeclarePassive(name, "direct", true, false, false, false, nil)
	})
	switch {
	case isNotFound(err):
		res.Absent++
		return nil
	case err != nil:
		return fmt.Errorf("checking exchange %s: %w", name, err)
	}
	res.Exchanges = append(res.Exchanges, name)
	return nil
}

// deleteFound deletes the queues and exchanges res lists; one already
// gone counts as deleted. It does not ask the broker for if-unused:
// quorum queues refuse that flag (540 NOT_IMPLEMENTED), and Clean checked
// for consumers just before.
func deleteFound(ctx context.Context, conn *amqp.Connection, res CleanResult) error {
	for _, q := range res.Deleted {
		err := onChannel(ctx, conn, func(ch *amqp.Channel) error {
			_, err := ch.QueueDelete(q.Name,
				false, // ifUnused: not supported by quorum queues; consumers were checked above
				false, // ifEmpty: no, a killed run's messages go with its queue
				false) // noWait: wait for the broker's answer
			return err
		})
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("deleting queue %s: %w", q.Name, err)
		}
	}
	for _, name := range res.Exchanges {
		err := onChannel(ctx, conn, func(ch *amqp.Channel) error {
			return ch.ExchangeDelete(name, false, false) // ifUnused, noWait: no
		})
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("deleting exchange %s: %w", name, err)
		}
	}
	return nil
}

// onChannel runs f on a channel of its own on conn (an error from the
// broker closes the channel it happens on), bounded by ctx and opTimeout.
func onChannel(ctx context.Context, conn *amqp.Connection, f func(*amqp.Channel) error) error {
	return within(ctx, func() error {
		ch, err := conn.Channel()
		if err != nil {
			return err
		}
		defer ch.Close()
		return f(ch)
	})
}

// ListLocal lists the queues (with their ready messages and consumers)
// and the exchanges of the local node with rabbitmqctl, where AMQP cannot
// list them: what a test killed mid-way declared under its prefix,
// whatever the names. It fails where rabbitmqctl is missing or cannot
// reach the node (a broker in a container).
func ListLocal(ctx context.Context) (queues []CleanedQueue, exchanges []string, err error) {
	out, err := exec.CommandContext(ctx, "rabbitmqctl", "list_queues", "-q", "--no-table-headers",
		"name", "messages_ready", "consumers").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("rabbitmqctl list_queues: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		q := CleanedQueue{Name: f[0]}
		q.Messages, _ = strconv.Atoi(f[1])
		q.Consumers, _ = strconv.Atoi(f[2])
		queues = append(queues, q)
	}
	out, err = exec.CommandContext(ctx, "rabbitmqctl", "list_exchanges", "-q", "--no-table-headers", "name").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("rabbitmqctl list_exchanges: %w", err)
	}
	return queues, strings.Fields(string(out)), nil
}

// CleanListed deletes, on the broker at url and over one connection, the
// queues and exchanges of the listing (ListLocal's) under any of the run
// prefixes (without their dot): what dead test processes declared, the
// hold queue <run>.foreign included, for a test's foreign messages are
// its own doing. A queue with a consumer is left and reported in InUse:
// some process still uses it. Nothing outside the prefixes is touched;
// a run id's prefix qlab-3f9a1c also covers 3f9a1c-…, the private
// prefix tests derive from a run id for --names exact --prefix. With
// dryRun it deletes nothing and reports what it would delete.
func CleanListed(ctx context.Context, url string, prefixes []string, queues []CleanedQueue, exchanges []string, dryRun bool) (CleanResult, error) {
	var res CleanResult
	var starts []string
	for _, p := range prefixes {
		if p == "" {
			continue
		}
		starts = append(starts, p+".")
		if id, ok := strings.CutPrefix(p, runIDPrefix); ok && len(id) == 2*runIDBytes {
			starts = append(starts, id+"-")
		}
	}
	under := func(name string) bool {
		return slices.ContainsFunc(starts, func(s string) bool { return strings.HasPrefix(name, s) })
	}
	for _, q := range queues {
		switch {
		case !under(q.Name):
		case q.Consumers > 0:
			res.InUse = append(res.InUse, q)
		default:
			res.Deleted = append(res.Deleted, q)
		}
	}
	for _, x := range exchanges {
		if under(x) {
			res.Exchanges = append(res.Exchanges, x)
		}
	}
	if dryRun || len(res.Deleted)+len(res.Exchanges) == 0 {
		return res, nil
	}
	conn, err := dial(ctx, url, nil)
	if err != nil {
		return res, err
	}
	defer closeWithin(conn)
	return res, deleteFound(ctx, conn, res)
}
