package flow

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// seed002 is the notification service's topology (seed 002): a work queue
// that dead-letters through a direct exchange to the DLQ, and a retry
// queue that dead-letters back to the work queue.
var seed002 = Topology{
	Queues: []Queue{
		{Name: "email-queue", Role: Work, DeadLetterExchange: "email-dlx", DeadLetterKey: "email-dlq", MaxLength: 100000},
		{Name: "email-retry-queue", Role: Delay, DeadLetterTo: "email-queue"},
		{Name: "email-dlq", Role: DLQ},
	},
	Exchanges: []Exchange{{Name: "email-dlx", Kind: Direct}},
	Bindings:  []Binding{{Exchange: "email-dlx", Queue: "email-dlq", Key: "email-dlq"}},
}

func TestDeadLetterTargetFollowsExchangesAndBindings(t *testing.T) {
	assert.NoError(t, seed002.Check())
	assert.Equal(t, "email-dlq", seed002.DeadLetterTarget("email-queue"), "through email-dlx and its binding")
	assert.Equal(t, "email-queue", seed002.DeadLetterTarget("email-retry-queue"), "through the default exchange")
	assert.Equal(t, "", seed002.DeadLetterTarget("email-dlq"), "no route: the broker drops it")
	assert.Equal(t, "", seed002.DeadLetterTarget("nowhere"))
}

func TestSettleFollowsWaitQueuesToWhereAMessageIsConsumed(t *testing.T) {
	chain := Topology{Queues: []Queue{
		{Name: "main", Role: Work, DeadLetterTo: "wait1"},
		{Name: "wait1", Role: Wait, TTL: time.Second, DeadLetterTo: "wait2"},
		{Name: "wait2", Role: Wait, TTL: time.Second, DeadLetterTo: "retry"},
		{Name: "retry", Role: Work},
	}}
	assert.NoError(t, chain.Check())
	assert.Equal(t, "retry", chain.Settle("wait1"), "two waits in a row")
	assert.Equal(t, "main", chain.Settle("main"), "a work queue is where it settles")
	assert.Equal(t, "email-queue", seed002.Settle("email-retry-queue"), "a delay queue settles where it dead-letters")
}

func TestRouteByExchangeKind(t *testing.T) {
	topo := Topology{
		Queues:    []Queue{{Name: "today"}, {Name: "all"}, {Name: "eu"}},
		Exchanges: []Exchange{{Name: "birthdays", Kind: Topic}, {Name: "fan", Kind: Fanout}, {Name: "direct", Kind: Direct}},
		Bindings: []Binding{
			{Exchange: "birthdays", Queue: "today", Key: "birthday.*.today"},
			{Exchange: "birthdays", Queue: "all", Key: "birthday.#"},
			{Exchange: "birthdays", Queue: "eu", Key: "*.eu.#"},
			{Exchange: "fan", Queue: "today"}, {Exchange: "fan", Queue: "all"},
			{Exchange: "direct", Queue: "eu", Key: "eu"},
		},
	}
	assert.NoError(t, topo.Check())
	cases := []struct {
		exchange, key string
		want          []string
	}{
		{"birthdays", "birthday.eu.today", []string{"today", "all", "eu"}},
		{"birthdays", "birthday", []string{"all"} /* # matches zero words */},
		{"birthdays", "birthday.us.tomorrow", []string{"all"}},
		{"birthdays", "party.eu", []string{"eu"}},
		{"fan", "anything", []string{"today", "all"}},
		{"direct", "eu", []string{"eu"}},
		{"direct", "us", nil},
		{"", "eu", []string{"eu"}},
		{"", "missing", nil},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, topo.Route(c.exchange, c.key), "%s %q", c.exchange, c.key)
	}
}

func TestCheckRejectsTopologiesThatCannotWork(t *testing.T) {
	bad := map[string]Topology{
		"repeated queue":          {Queues: []Queue{{Name: "a"}, {Name: "a"}}},
		"unknown dead letter":     {Queues: []Queue{{Name: "a", DeadLetterTo: "b"}}},
		"unknown exchange":        {Queues: []Queue{{Name: "a", DeadLetterExchange: "x"}}},
		"both routes":             {Queues: []Queue{{Name: "a", DeadLetterTo: "a", DeadLetterExchange: "x"}}, Exchanges: []Exchange{{Name: "x"}}},
		"wait without TTL":        {Queues: []Queue{{Name: "w", Role: Wait, DeadLetterTo: "a"}, {Name: "a"}}},
		"wait without route":      {Queues: []Queue{{Name: "w", Role: Wait, TTL: time.Second}}},
		"delay without route":     {Queues: []Queue{{Name: "d", Role: Delay}}},
		"binding to nowhere":      {Queues: []Queue{{Name: "a"}}, Exchanges: []Exchange{{Name: "x"}}, Bindings: []Binding{{Exchange: "x", Queue: "b"}}},
		"negative max length":     {Queues: []Queue{{Name: "a", MaxLength: -1}}},
		"exchange without a name": {Exchanges: []Exchange{{}}},
	}
	for name, topo := range bad {
		assert.Error(t, topo.Check(), name)
	}
}
