// Package faults is the lab's fault suite, test code only: every broker
// lesson enrolled with Lesson.Faults runs on a private RabbitMQ node
// (rabbittest.NewNode; the shared node on 5672 is never disturbed) while a
// fault is injected at a seeded moment: the broker closes every
// connection, the broker application restarts, a queue is deleted from
// outside, or the qlab process is killed and a second process finds and
// removes what it left. The lessons with a status store (Q18, Q20, Q23,
// Q24) also lose their database mid-run: PostgreSQL behind a proxy that
// cuts every connection (needs QLAB_DATABASE_URL; skipped without it,
// failed under QLAB_REQUIRE_DB=1), and no row may be left SENT that no
// worker began to send. Each case checks that every task is accounted for
// (one summary each, lost only with a reason), that the run ends within
// its bound, leaves no goroutine and no queue behind, and prints one line
// (fault=restart lesson=q10 tasks=4 done=3 …) to the fault report.
//
// The node failure runs on a three-node cluster (rabbit/cluster, one for
// the package through clustertest: TestMain runs the tests through
// clustertest.Main, which removes it). Q10 runs with every queue declared
// quorum (lesson.Options.Quorum; its code unchanged) on the cluster's URL
// list, and the node leading its main queue is stopped (cluster.Kill,
// rabbitmqctl stop_app) inside a seeded Started event, so the worker that
// emitted it holds a delivery unacked while its node goes, then revived.
// It must account for every task, count the redeliveries, leave no queue
// and every node running; its line adds the leader's move, the stop's
// duration and the longest a consumer had no connection. Q21, which
// stops its own leader, is held to the same and more by its own tests on
// the same shared cluster (lessons/q21).
package faults
