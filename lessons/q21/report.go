package q21

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuelab/qlab/rabbit/cluster"
	"github.com/queuelab/qlab/render"
)

// Version is the broker version the notes' figures were measured on.
const Version = "3.10.8"

// failoverTable is what the stop cost, measured.
func failoverTable(f *failed, c *cluster.Cluster) render.Table {
	sentOnce, twice, never := 0, 0, 0
	for _, id := range messageIDs() {
		switch n := f.sends[id]; {
		case n == 1:
			sentOnce++
		case n > 1:
			twice++
		default:
			never++
		}
	}
	redelivered, absorbed, sending := 0, 0, 0
	for _, w := range f.workers {
		redelivered += w.redelivered
		absorbed += w.absorbed
		sending += w.sending
	}
	if !f.stopped {
		return notStoppedTable(f, sentOnce, twice, never)
	}
	t := render.Table{
		Title:  "What happened: the leader's node stopped mid-run",
		Header: []string{"measure", "value"},
		Rows: [][]string{
			{"leader before → after", fmt.Sprintf("%s → %s", f.leader.Short, f.newLeader.Short)},
			{"rabbitmqctl stop_app on " + f.leader.Short, secs(f.stopTook)},
			{"longest wait for a confirm (the probe)", fmt.Sprintf("%s (%d confirmed)", secs(f.noLeader), f.probes)},
			{"from the stop to every message acked", secs(f.settled)},
			{"messages sent once / twice / never", fmt.Sprintf("%d / %d / %d of %d", sentOnce, twice, never, Messages)},
			{"deliveries redelivered", strconv.Itoa(redelivered)},
			{"redelivered copies absorbed by the store", fmt.Sprintf("%d (%s)", absorbed, f.store)},
			{"node revived after", secs(f.revived) + " (by " + f.revivedBy + ")"},
		},
		Notes: []string{
			"The probe publishes to a quorum queue led by the same node, from a connection to a " +
				"node that stays up, each publish confirmed before the next: its longest wait is the " +
				"time the client saw no leader. Failover cost: that wait, plus the redeliveries.",
			"absorbed: a copy redelivered after its worker had sent it and marked it SENT, but " +
				"its ack went down with the connection; the store's claim refused it (seed 003's " +
				"idempotency check), so no customer got it twice.",
			fmt.Sprintf("Copies that found their row SENDING: %d. Such a row's worker lost its "+
				"channel, not its life, and is still sending: Q20's resend rule (SENDING on a "+
				"redelivery means the worker died) is false here and would send it twice. This "+
				"worker waits for the row to turn SENT.", sending),
			fmt.Sprintf("Cluster %s. The members still up elect the new leader (Raft, on 3.10 "+
				"and 4.x alike); the rows above say when, in this run, on this cluster's version.", c.ID),
		},
	}
	return t
}

// notStoppedTable is part 1 when the student pressed no k before every
// message was sent: the same counts, and no failover to measure.
func notStoppedTable(f *failed, sentOnce, twice, never int) render.Table {
	return render.Table{
		Title:  "What happened: the leader's node was not stopped",
		Header: []string{"measure", "value"},
		Rows: [][]string{
			{"leader", f.leader.Short + " (not stopped: no k before every message was sent)"},
			{"longest wait for a confirm (the probe)", fmt.Sprintf("%s (%d confirmed)", secs(f.noLeader), f.probes)},
			{"messages sent once / twice / never", fmt.Sprintf("%d / %d / %d of %d", sentOnce, twice, never, Messages)},
		},
		Notes: []string{
			"No node stopped, so no new leader, no reconnect, no redelivery: the probe's longest " +
				"wait is the baseline a failover adds to. Press r and then k while the messages " +
				"are sent to pull the plug.",
		},
	}
}

// workerTable is each worker's nodes and what it saw.
func workerTable(f *failed) render.Table {
	var rows [][]string
	for _, w := range f.workers {
		w.mu.Lock()
		outage := "-"
		if d := w.outage(); d > 0 {
			outage = secs(d)
		}
		rows = append(rows, []string{w.name, w.pace.label, strings.Join(w.nodes, " → "),
			strconv.Itoa(w.deliveries), strconv.Itoa(w.redelivered), strconv.Itoa(w.absorbed),
			strconv.Itoa(w.sentHere), outage})
		w.mu.Unlock()
	}
	return workerTableOf(rows)
}

// workerTableOf is the workers table with rows, one per worker (a test
// lays it out at 80 columns without a cluster).
func workerTableOf(rows [][]string) render.Table {
	t := render.Table{Rows: rows,
		Title: "The workers: where they consumed, what the stop did to them",
		// Short headings and cells: each row reads on one line at 80
		// columns (TestWorkerTableFitsWithoutACluster); the notes say more.
		Header: []string{"worker", "URLs", "nodes", "delivered", "redelivered", "absorbed", "sent",
			"no node"},
		Notes: []string{
			"nodes: where the worker consumed, in order. Its unacked messages (prefetch 5) go back " +
				"to the queue when its connection dies and come again with the redelivered flag.",
			"URLs: how many nodes' URLs the worker's amqp-connection-manager 5.0.0 was given, " +
				"set up as seed 003's workers set it: heartbeatIntervalInSeconds 60, and " +
				"reconnectTimeInSeconds defaults to it (src/AmqpConnectionManager.ts, tag v5.0.0). " +
				"After a close it waits 60 s, then tries the next URL of its list, and waits 60 s " +
				"again after each failed try. Given all three nodes it is back after 60 s; given the " +
				"seed's single RABBITMQ_URL it tries the stopped node until that node is back. " +
				"Measured with the library on 3.10.8: 60.1 s and 120.1 s. any: the lab's own loop, " +
				"for contrast: any node at once, again every 0.2 s.",
			"no node: lesson time from its connection's close to its next consume.",
		},
	}
	return t
}

// latencyTable is part 2's figures.
func latencyTable(ls []latencyOf, node string) render.Table {
	t := render.Table{
		Title:  "Publish latency with confirms: classic against quorum, same cluster",
		Header: []string{"queue", "p50", "p99", "one at a time"},
		Notes: []string{
			fmt.Sprintf("%d persistent 256-byte publishes per queue from a client on %s, each "+
				"waiting for its confirm. A quorum queue confirms once a majority (two of three) "+
				"has written the message: seed 003's \"higher latency\", measured. On a busy machine "+
				"the tails are the machine's.", latencyPublishes, node),
		},
	}
	for _, l := range ls {
		t.Rows = append(t.Rows, []string{l.kind, ms(l.p50), ms(l.p99), fmt.Sprintf("%.0f msg/s", l.rate)})
	}
	return t
}

// limitTable is part 3's poison messages, measured on RabbitMQ version.
func limitTable(ps []*poison, version string) render.Table {
	t := render.Table{
		Title: fmt.Sprintf("The delivery limit: x-delivery-limit %d, every delivery rejected with requeue (RabbitMQ %s)",
			DeliveryLimit, version),
		Header: []string{"message", "dead-letter exchange", "deliveries", "x-delivery-count seen", "then"},
		Notes: []string{
			"The x-delivery-count column is what each delivery carried, as measured: once the count " +
				"passes the limit the message is dead-lettered (x-death reason delivery_limit) or, " +
				"with no dead-letter exchange, dropped.",
			"The consumer rejects (basic.reject): on 4.3 a basic.nack with requeue does not count " +
				"toward the limit at all. The next table measures what counts on RabbitMQ " + version +
				", and the default limit a queue gets without x-delivery-limit: give such queues a " +
				"dead-letter exchange (a policy, as the 4.0 release notes advise).",
		},
	}
	for _, p := range ps {
		dlx := "no"
		if p.dlx {
			dlx = "yes"
		}
		t.Rows = append(t.Rows, []string{p.task, dlx, strconv.Itoa(len(p.counts)),
			strings.Join(p.counts, ", "), p.end})
	}
	return t
}

// strategyTable is part 4's two sources.
func strategyTable(ss []*strategy) render.Table {
	t := render.Table{
		Title:  "Dead-lettering into a full target (x-max-length 1, reject-publish)",
		Header: []string{"strategy", "rejected", "in the target", "kept by the source", "lost"},
		Notes: []string{
			"at-most-once (the default) publishes a dead letter without a confirm: what the " +
				"target refuses is gone. at-least-once (RabbitMQ 3.10+, quorum sources only; it " +
				"needs x-overflow reject-publish, else the broker falls back to at-most-once) keeps " +
				"each dead letter in the source until a target confirms it.",
			"kept: what the source holds that is neither ready nor unacked (rabbitmqctl " +
				"list_queues; the management API calls it messages_dlx). The broker retries them on a " +
				"timer (dead_letter_worker_publisher_confirm_timeout, 180 s by default on 3.13 and " +
				"4.x); measured on " + Version + ", nothing arrived within two minutes of the " +
				"target having room, so the run does not wait for it.",
		},
	}
	for _, s := range ss {
		var lost []string
		for _, task := range s.tasks {
			if !slices.Contains(s.inTarget, task) && s.held == 0 {
				lost = append(lost, task)
			}
		}
		t.Rows = append(t.Rows, []string{s.name, strconv.Itoa(len(s.tasks)),
			orDash(strings.Join(s.inTarget, " ")), strconv.Itoa(s.held), orDash(strings.Join(lost, " "))})
	}
	return t
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
