package compare

import (
	"context"
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompareQ10OnBothBackends(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	l, err := lessons.Parse("10")
	require.NoError(t, err)
	var rep Report
	lessontest.NoGoroutineOutlives(t, func() {
		rep, err = Run(context.Background(), l, Config{Speed: 40, Broker: url, BrokerInfo: "test broker"})
	})
	require.NoError(t, err)

	// Same tasks, same failure plan: the same fate and attempts per task.
	inmem, broker := rep.Main[0].Ledger().Tasks(), rep.Main[1].Ledger().Tasks()
	require.Len(t, broker, len(inmem))
	for i := range inmem {
		assert.Equal(t, inmem[i].ID, broker[i].ID)
		assert.Equal(t, inmem[i].Fate, broker[i].Fate, "fate of %s", inmem[i].ID)
		assert.Equal(t, inmem[i].Attempts, broker[i].Attempts, "attempts of %s", inmem[i].ID)
	}

	// The persistence row comes from a real interruption: memory loses
	// tasks, the broker none, and every task of every run is accounted for.
	lost := rep.Persistence[0].Fates()[lab.FateLost]
	assert.Positive(t, lost, "the in-memory process took tasks with it")
	assert.Zero(t, rep.Persistence[1].Fates()[lab.FateLost], "the broker kept every waiting message")
	assert.Zero(t, rep.Persistence[1].Fates()[lab.FatePending], "and the reconnected consumers finished them")
	for _, s := range append(rep.Main[:], rep.Persistence[:]...) {
		labtest.AssertAccounted(t, s.Events)
	}
	require.Len(t, rep.Tables, 6)
}
