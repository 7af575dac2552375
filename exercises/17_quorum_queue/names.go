package quorumqueue

import "github.com/queuelab/qlab/seeds/birthday"

// Queue is seed 003's queue; the checker gives Declare and Publish this
// name under its private prefix.
const Queue = birthday.Queue

// Batch is how many birthday messages the checker publishes through
// your Publish.
const Batch = 20
