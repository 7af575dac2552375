package render

import (
	"bytes"
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/stretchr/testify/assert"
)

func TestMermaidOneArrowPerHop(t *testing.T) {
	events := []lab.Event{
		{TMs: 0, Kind: lab.Enqueued, Task: "C", Queue: "queue", Actor: "Producer"},
		{TMs: 0, Kind: lab.Started, Task: "C", Queue: "queue", Actor: "Sequential-Worker", Attempt: 1},
		{TMs: 100, Kind: lab.Failed, Task: "C", Queue: "queue", Actor: "Sequential-Worker", Attempt: 1, Note: "boom: x"},
		{TMs: 100, Kind: lab.Scheduled, Task: "C", Queue: "queue", To: "retryQueue", Actor: "Sequential-Worker", DelayMs: 1000},
		{TMs: 1100, Kind: lab.Started, Task: "C", Queue: "retryQueue", Actor: "Retry-Worker", Attempt: 2},
		{TMs: 1200, Kind: lab.DeadLettered, Task: "C", Queue: "retryQueue", To: "dlq", Actor: "Retry-Worker"},
		{TMs: 1300, Kind: lab.Summary, Task: "C", Fate: lab.FateDead},
	}
	var b bytes.Buffer
	Mermaid(&b, events)
	want := `sequenceDiagram
    participant P1 as Producer
    participant P2 as queue
    participant P3 as Sequential-Worker
    participant P4 as retryQueue
    participant P5 as Retry-Worker
    participant P6 as dlq
    P1->>P2: enqueue C
    P2->>P3: C (attempt 1)
    Note over P3: C failed: boom - x
    P3-->>P4: C after 1s
    P4->>P5: C (attempt 2)
    P5->>P6: dead-letter C
`
	assert.Equal(t, want, b.String())
}

// TestMermaidSaysWhatHappened: a drop is not a loss, a customer's mail is
// not an alert, and a stranded task shows where it sits (issue 20).
func TestMermaidSaysWhatHappened(t *testing.T) {
	var b bytes.Buffer
	Mermaid(&b, []lab.Event{
		{Kind: lab.Dropped, Task: "C", Actor: "W"},
		{Kind: lab.Mailed, Task: "A1", Actor: "Mail-Server"},
		{Kind: lab.Stranded, Task: "dC", Actor: "Broker", Queue: "email-queue", To: "email-retry-queue"},
		{Kind: lab.Refused, Task: "r11", Actor: "API", Queue: "email-queue", Note: "nacked"},
	})
	want := `sequenceDiagram
    participant P1 as API
    participant P2 as email-queue
    participant P3 as email-retry-queue
    participant P4 as Mail-Server
    participant P5 as W
    P1-xP2: r11 refused - nacked
    P2->>P3: dC stranded
    Note over P3: dC stranded, nothing consumes it
    Note over P4: mail to the customer of A1
    Note over P5: C dropped on purpose
`
	assert.Equal(t, want, b.String())
}

// TestMermaidSaysARequeueAtTheHead: the diagram says what the log and the
// TUI say, a broker's requeue back at the head; memory's, the tail, is a
// plain move.
func TestMermaidSaysARequeueAtTheHead(t *testing.T) {
	var b bytes.Buffer
	Mermaid(&b, []lab.Event{
		{Kind: lab.Moved, Task: "C", Actor: "W", Queue: "q", To: "q", Place: lab.AtHead},
		{Kind: lab.Moved, Task: "D", Actor: "W", Queue: "q", To: "q"},
	})
	want := `sequenceDiagram
    participant P1 as W
    participant P2 as q
    P1->>P2: move C to the head
    P1->>P2: move D
`
	assert.Equal(t, want, b.String())
}
