package q21_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/q21"
	"github.com/queuelab/qlab/rabbit/cluster"
	"github.com/queuelab/qlab/rabbit/cluster/clustertest"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/render"
)

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }

// TestQ21OnACluster runs the whole lesson once on the package's cluster
// (its parts share the run: a cluster and a node stop take minutes) and
// checks each part's claim against the events and the measured tables.
func TestQ21OnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster and stops a node (two to three minutes)")
	}
	t.Parallel()
	for _, v := range rabbittest.Versions {
		t.Run(string(v), func(t *testing.T) {
			// Two clusters: the runs mostly wait, so side by side. Each
			// takes its cluster here, so the 3.10 one, which make test
			// shares between packages, is free again when its run ends.
			t.Parallel()
			get := clustertest.Get
			if v == rabbittest.V43 {
				get = clustertest.Get43
			}
			c := get(t)
			q21.Hold(t, c)
			q21OnACluster(t, c)
		})
	}
}

// q21OnACluster runs Q21 on c and holds each part to its claim.
func q21OnACluster(t *testing.T, c *cluster.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var rec lab.Recorder
	l := q21.New(func(context.Context, *lesson.Env) (*cluster.Cluster, error) { return c, nil })
	res, err := lesson.Run(ctx, l, lesson.Options{Backend: lab.Rabbit, Broker: c.URLList(), Speed: l.WatchSpeed}, &rec)
	require.NoError(t, err)
	fates := map[string]lab.Fate{}
	for _, task := range res.Tasks {
		fates[task.ID] = task.Fate
	}
	tables := map[string]render.Table{}
	for _, tb := range res.Tables {
		tables[strings.SplitN(tb.Title, ":", 2)[0]] = tb
	}

	t.Run("every message sent once after the leader's node stopped", func(t *testing.T) {
		succeeded := map[string]int{}
		for _, e := range rec.Events {
			if e.Kind == lab.Succeeded && strings.HasPrefix(e.Task, "M") {
				succeeded[e.Task]++
			}
		}
		for i := 1; i <= q21.Messages; i++ {
			id := fmt.Sprintf("M%02d", i)
			assert.Equal(t, lab.FateDone, fates[id], id)
			assert.Equal(t, 1, succeeded[id], "%s sent once: the store absorbs a redelivered copy", id)
		}
	})

	t.Run("a new leader, and the worker on the stopped node moved", func(t *testing.T) {
		f := tables["What happened"]
		leader := row(t, f, "leader before → after")
		before, after, ok := strings.Cut(leader, " → ")
		require.True(t, ok, leader)
		assert.NotEqual(t, before, after, "the stopped node cannot lead")
		w := tables["The workers"]
		require.Len(t, w.Rows, 4)
		w1 := strings.Split(w.Rows[0][2], " → ")
		require.Len(t, w1, 2, "Worker-1 reconnected once: %s", w.Rows[0][2])
		assert.Equal(t, before, w1[0], "Worker-1 consumed from the leader's node")
		assert.NotEqual(t, before, w1[1], "and moved to a live one")
		assert.NotContains(t, w.Rows[1][2], "→", "Worker-2's node stayed up and so did its connection")
		assert.NotEqual(t, before, w.Rows[1][2])
		assert.Equal(t, before+" → "+before, w.Rows[2][2], "Worker-3 knows only the stopped node's URL")
	})
	t.Run("the workers reconnect at amqp-connection-manager's pace, the lab's at once", func(t *testing.T) {
		w := tables["The workers"]
		require.Len(t, w.Rows, 4)
		outage := func(row int) time.Duration {
			s, ok := strings.CutSuffix(w.Rows[row][7], " s")
			require.True(t, ok, "%s without a node: %q", w.Rows[row][0], w.Rows[row][7])
			f, err := strconv.ParseFloat(s, 64)
			require.NoError(t, err)
			return time.Duration(f * float64(time.Second))
		}
		assert.Equal(t, []string{q21.Worker1, q21.Worker2, q21.Worker3, q21.LabWorker},
			[]string{w.Rows[0][0], w.Rows[1][0], w.Rows[2][0], w.Rows[3][0]})
		// Lesson time; the wait is the library's, the rest (a consume
		// refused while no leader is elected, a slow stop_app) can add.
		assert.GreaterOrEqual(t, outage(0), q21.ReconnectTime, "three URLs: one 60 s wait")
		assert.Less(t, outage(0), 2*q21.ReconnectTime, "then the next URL, a live node")
		assert.GreaterOrEqual(t, outage(2), 2*q21.ReconnectTime, "one URL: back only at a try after its node is")
		assert.Less(t, outage(3), q21.ReconnectTime, "the lab's loop does not wait")
		assert.Equal(t, "-", w.Rows[1][7], "Worker-2's connection never died")
	})

	t.Run("redeliveries counted, and each already SENT copy absorbed", func(t *testing.T) {
		redelivered, absorbed := 0, 0
		sent := map[string]bool{}
		for _, e := range rec.Events {
			switch e.Kind {
			case lab.Succeeded:
				sent[e.Task] = true
			case lab.Redelivered:
				redelivered++
			case lab.Duplicate:
				absorbed++
				assert.True(t, sent[e.Task], "%s absorbed before it was ever sent", e.Task)
			}
		}
		assert.Positive(t, redelivered, "Worker-1 held up to five unacked messages when its node stopped")
		f := tables["What happened"]
		assert.Equal(t, strconv.Itoa(redelivered), row(t, f, "deliveries redelivered"))
		assert.True(t, strings.HasPrefix(row(t, f, "redelivered copies absorbed by the store"), strconv.Itoa(absorbed)+" "))
	})

	t.Run("the delivery limit dead-letters or drops at limit+1 deliveries", func(t *testing.T) {
		assert.Equal(t, lab.FateDead, fates["P1"], "P1's queue has a dead-letter exchange")
		assert.Equal(t, lab.FateDropped, fates["P2"], "P2's queue has none")
		for _, task := range res.Tasks {
			if task.ID == "P1" || task.ID == "P2" {
				assert.Equal(t, q21.DeliveryLimit+1, task.Attempts, "%s: measured on 3.10.8", task.ID)
			}
		}
		limit := tables["The delivery limit"]
		require.Len(t, limit.Rows, 2)
		assert.Equal(t, "-, 1, 2", limit.Rows[0][3], "no x-delivery-count on the first delivery, then 1, 2")
		assert.Contains(t, limit.Rows[0][4], "delivery_limit", "x-death's reason")
	})

	t.Run("what counts as a delivery on this cluster's version", func(t *testing.T) {
		counts := tables["What counts as a delivery"]
		want := map[string][][]string{
			"3.10": {{"basic.nack, requeue", "0 1 2 3", "- - - -", "still there after 25"},
				{"basic.reject, requeue", "0 1 2 3", "- - - -", "still there after 25"},
				{"channel closed, unacked", "0 1 2 3", "- - - -", "-"}},
			"4.3": {{"basic.nack, requeue", "- - - -", "- 1 2 3", "still there after 25"},
				{"basic.reject, requeue", "- 1 2 3", "- 1 2 3", "dropped at delivery 21"},
				{"channel closed, unacked", "- 1 2 3", "- 1 2 3", "-"}},
		}
		for line, rows := range want {
			if strings.Contains(counts.Title, "(RabbitMQ "+line+".") {
				assert.Equal(t, rows, counts.Rows)
				return
			}
		}
		t.Errorf("no figures held for the cluster's version: %s", counts.Title)
	})

	t.Run("at-most-once loses what the full target refuses, at-least-once keeps it", func(t *testing.T) {
		assert.Equal(t, lab.FateDead, fates["AM1"])
		assert.Equal(t, lab.FateLost, fates["AM2"])
		assert.Equal(t, lab.FateLost, fates["AM3"])
		assert.Equal(t, lab.FateDead, fates["AL1"])
		assert.Equal(t, lab.FateStranded, fates["AL2"])
		assert.Equal(t, lab.FateStranded, fates["AL3"])
		s := tables["Dead-lettering into a full target (x-max-length 1, reject-publish)"]
		require.Len(t, s.Rows, 2)
		assert.Equal(t, []string{"at-least-once", "3", "AL1", "2", "-"}, s.Rows[1])
	})

	t.Run("the stopped node revived, nothing of the run left", func(t *testing.T) {
		for _, n := range c.Nodes {
			assert.Equal(t, cluster.Running, c.State(ctx, n), n.Short)
		}
		qs, err := c.Queues(ctx)
		require.NoError(t, err)
		for _, q := range qs {
			assert.NotContains(t, q.Name, ".birthday.messages", "left behind: %s", q.Name)
			assert.NotContains(t, q.Name, ".q21.", "left behind: %s", q.Name)
		}
	})

	t.Run("the lesson stops nodes of this cluster only", func(t *testing.T) {
		assert.NoError(t, q21.OnCluster(c.URLList(), c))
		assert.NoError(t, q21.OnCluster("", c), "no broker named: the cluster's own nodes")
		err := q21.OnCluster(c.URLs()[1]+",amqp://guest:secret@127.0.0.1:5672/", c)
		require.Error(t, err, "the shared node is no node of this cluster")
		assert.NotContains(t, err.Error(), "secret", "a password never prints")
	})

	t.Run("every task accounted for, tables within 100 columns", func(t *testing.T) {
		summaries := 0
		for _, e := range rec.Events {
			if e.Kind == lab.Summary {
				summaries++
			}
		}
		assert.Equal(t, len(res.Tasks), summaries)
		assert.Len(t, res.Tasks, q21.Messages+2+6)
		labtest.AssertAccounted(t, rec.Events) // the accounting suite's check, which skips Q21
		assert.Empty(t, l.Unexpected(lab.Rabbit, res.Tasks), "lost only AM2 and AM3, on purpose")
		assert.NoError(t, lesson.CheckLost(l, lesson.Options{Backend: lab.Rabbit}, res, nil))
		for _, task := range res.Tasks { // the fault suite held this when it ran Q21 too
			if task.Fate == lab.FateLost {
				assert.True(t, slices.ContainsFunc(labtest.Of(rec.Events, task.ID, lab.Lost),
					func(e lab.Event) bool { return e.Note != "" }), "%s lost without a reason", task.ID)
			}
		}
		var b strings.Builder
		page := render.Page{W: &b, Layout: render.LayoutFor(render.DefaultWidth)}
		page.Tables(res.Tables)
		for _, line := range strings.Split(b.String(), "\n") {
			assert.LessOrEqual(t, len([]rune(line)), 100, line)
		}
		for _, tb := range append(res.Tables, render.WhatHappened(rec.Events)) { // TestWidth skips Q21
			assert.Empty(t, tb.Cuts(render.LayoutFor(render.DefaultWidth)), "%q splits a word at 80 columns", tb.Title)
		}
	})
}

// TestRecordedWithoutAClusterSaysHowToStartOne: with no cluster recorded
// the lesson's finder says in one line how to start one.
func TestRecordedWithoutAClusterSaysHowToStartOne(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	env := &lesson.Env{Options: lesson.Options{Broker: "amqp://guest:guest@127.0.0.1:5672/"}}
	_, err := q21.Recorded(context.Background(), env)
	assert.ErrorIs(t, err, q21.ErrNoCluster, "no state file: no cluster")
	assert.Contains(t, err.Error(), "qlab broker cluster up")
}

func row(t *testing.T, tb render.Table, measure string) string {
	t.Helper()
	for _, r := range tb.Rows {
		if r[0] == measure {
			return r[1]
		}
	}
	t.Fatalf("no row %q in %q", measure, tb.Title)
	return ""
}
