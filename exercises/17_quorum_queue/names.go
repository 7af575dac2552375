package quorumqueue

import "github.com/queuelab/qlab/lessons/q18"

// Queue is seed 003's queue; the checker gives Declare and Publish this
// name under its private prefix.
const Queue = q18.Queue

// Batch is how many birthday messages the checker publishes through
// your Publish.
const Batch = 20
