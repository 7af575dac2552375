package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keep means the kind leaves a task's fate as it was.
const keep Fate = "keep"

// ledgerRules is the ledger rule of every kind: the fate a task that was
// done has after one event of that kind. A new kind fails
// TestEveryKindHasALedgerRule until it is given one here (and in Ledger).
var ledgerRules = map[Kind]Fate{
	Enqueued: FatePending, Started: keep, Succeeded: FateDone, Failed: keep,
	Moved: FatePending, Scheduled: FatePending, DeadLettered: FateDead, Dropped: FateDropped,
	Alerted: keep, Breaker: keep, Rejected: keep, Duplicate: FateDone,
	Redelivered: FatePending, Lost: FateLost, Summary: keep, Phase: keep, Received: keep,
}

func TestEveryKindHasALedgerRule(t *testing.T) {
	for _, k := range Kinds {
		want, ok := ledgerRules[k]
		require.True(t, ok, "kind %q has no ledger rule: add it to ledgerRules and to Ledger.observe", k)
		var l Ledger
		l.Observe(Event{Kind: Enqueued, Task: "T"})
		l.Observe(Event{Kind: Succeeded, Task: "T"})
		l.Observe(Event{Kind: k, Task: "T", TMs: 5})
		got, _ := l.Task("T")
		if want == keep {
			want = FateDone
		}
		assert.Equal(t, want, got.Fate, "fate after %s", k)
		wantAttempts := 0
		if k == Started {
			wantAttempts = 1
		}
		assert.Equal(t, wantAttempts, got.Attempts, "attempts after %s", k)
	}
	assert.Len(t, ledgerRules, len(Kinds), "ledgerRules names a kind that Kinds does not list")
}
