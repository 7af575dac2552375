// Package cluster starts, inspects and removes a RabbitMQ cluster for the
// lab: three nodes (by default) on this machine, each a rabbitmq-server
// process with its own node name, ports, directories and config file,
// n1 booted first and the others joining it as they boot (classic_config
// peer discovery); or, where no rabbitmq-server can run but a Docker
// engine answers, three containers on a network of their own, joined with
// rabbitmqctl join_cluster. Every node runs the rabbitmq_prometheus
// plugin, and rabbitmq_management unless the cluster is lean
// (Options.Lean, the test clusters), on ports of its own.
//
// Up starts a cluster and records it in a state file before starting
// anything, so Load and Down can remove it from another process or after
// a crash. Kill and Revive stop and restart one node's application, for a
// quorum queue's leader to move; Leader and Queues say where it went.
// The shared node on 127.0.0.1:5672 is never touched: every command is
// addressed to a node of the cluster by name.
//
// Tests that need a cluster share one per package through
// rabbit/cluster/clustertest.
package cluster
