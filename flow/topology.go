package flow

import (
	"fmt"
	"strings"
	"time"
)

// Role says what a queue is for.
type Role string

// The roles a queue can play.
const (
	Work Role = "work" // consumed by a worker
	Wait Role = "wait" // never consumed: messages sit out their TTL, then dead-letter onward
	DLQ  Role = "dlq"  // the dead-letter queue, where messages that gave up are parked
	// Delay is never consumed either, but has no queue TTL: each message
	// carries its own (a per-message expiration) and dead-letters onward
	// when it expires. On a classic RabbitMQ queue only the head of the
	// queue expires, so a long TTL holds back every shorter one queued
	// behind it (the head-of-line trap of seed 002).
	Delay Role = "delay"
)

// Queue is one durable queue of a Topology, named as in the seed (a
// backend may add a private prefix).
type Queue struct {
	Name string
	Role Role
	// TTL is the lesson-time x-message-ttl; 0 means none. A broker
	// declares Clock.Real(TTL), so at --speed S it waits TTL/S.
	TTL time.Duration
	// DeadLetterTo names the queue (of the same Topology) that messages go
	// to when they expire here or are rejected without requeue, through
	// the default exchange; "" means none (or see DeadLetterExchange).
	DeadLetterTo string
	// DeadLetterExchange, when set, names an exchange of the Topology that
	// dead letters are published to instead, with routing key
	// DeadLetterKey (seed 002's email-dlx). It excludes DeadLetterTo.
	DeadLetterExchange string
	DeadLetterKey      string
	// MaxLength caps how many messages the queue holds (x-max-length);
	// 0 means no cap. Overflow says what happens past it.
	MaxLength int
	Overflow  Overflow
	// Quorum declares the queue as a RabbitMQ quorum queue (x-queue-type
	// quorum: replicated, durable); false is a classic queue. Memory has
	// no queue types and ignores it.
	Quorum bool
}

// Overflow is what a full queue (MaxLength) does with one more message.
type Overflow string

// The overflow behaviours of RabbitMQ's x-overflow.
const (
	DropHead      Overflow = ""               // the default: the oldest message is dropped or dead-lettered
	RejectPublish Overflow = "reject-publish" // the new message is refused (a nack to a confirming publisher)
)

// ExchangeKind is an exchange's routing rule.
type ExchangeKind string

// The exchange kinds the lab uses.
const (
	Direct ExchangeKind = "direct" // routing key equals binding key
	Topic  ExchangeKind = "topic"  // binding key is a pattern of dot-separated words (* one, # any)
	Fanout ExchangeKind = "fanout" // every bound queue, whatever the key
)

// Exchange is a named, durable exchange of a Topology.
type Exchange struct {
	Name string
	Kind ExchangeKind
}

// Binding routes messages published to Exchange with a matching key to
// Queue.
type Binding struct {
	Exchange, Queue, Key string
}

// Topology is the declarative set of queues, exchanges and bindings a
// lesson needs. Backends declare it; renderers (TUI, compare) read it.
type Topology struct {
	Queues    []Queue
	Exchanges []Exchange
	Bindings  []Binding
}

// Queue returns the queue called name and whether it exists.
func (t Topology) Queue(name string) (Queue, bool) {
	for _, q := range t.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return Queue{}, false
}

// HasExchange reports whether t declares exchange name.
func (t Topology) HasExchange(name string) bool {
	for _, x := range t.Exchanges {
		if x.Name == name {
			return true
		}
	}
	return false
}

// DeadLetterTarget is the queue a message rejected or expired in queue
// name goes to, following the default exchange or a dead-letter exchange
// and its bindings; "" when it has no route (the broker drops it).
func (t Topology) DeadLetterTarget(name string) string {
	q, ok := t.Queue(name)
	switch {
	case !ok:
		return ""
	case q.DeadLetterExchange != "":
		if routes := t.Route(q.DeadLetterExchange, q.DeadLetterKey); len(routes) > 0 {
			return routes[0]
		}
		return ""
	}
	return q.DeadLetterTo
}

// Route lists the queues a message published to exchange with key
// reaches, in binding order; exchange "" is the default exchange, which
// routes to the queue named key.
func (t Topology) Route(exchange, key string) []string {
	if exchange == "" {
		if _, ok := t.Queue(key); ok {
			return []string{key}
		}
		return nil
	}
	var kind ExchangeKind
	for _, x := range t.Exchanges {
		if x.Name == exchange {
			kind = x.Kind
		}
	}
	var out []string
	for _, b := range t.Bindings {
		if b.Exchange == exchange && matches(kind, b.Key, key) {
			out = append(out, b.Queue)
		}
	}
	return out
}

// Settle is where a message handed to queue name finally rests or is
// consumed: the queue itself, or, for a wait or delay queue, wherever its
// dead-letter route leads once the message expires. It stops at the
// first queue that is not a wait or delay queue.
func (t Topology) Settle(name string) string {
	for range len(t.Queues) { // a Checked topology has no wait-queue cycle longer than this
		q, ok := t.Queue(name)
		if !ok || (q.Role != Wait && q.Role != Delay) {
			return name
		}
		name = t.DeadLetterTarget(name)
	}
	return name
}

// Check reports a topology whose routes name unknown queues or exchanges,
// or whose wait queues could never empty, so mistakes fail before any
// backend is touched.
func (t Topology) Check() error {
	seen := map[string]bool{}
	for _, q := range t.Queues {
		if q.Name == "" || seen[q.Name] {
			return fmt.Errorf("topology: queue name %q is empty or repeated", q.Name)
		}
		seen[q.Name] = true
	}
	exchanges := map[string]bool{}
	for _, x := range t.Exchanges {
		if x.Name == "" || exchanges[x.Name] {
			return fmt.Errorf("topology: exchange name %q is empty or repeated", x.Name)
		}
		exchanges[x.Name] = true
	}
	for _, b := range t.Bindings {
		if !exchanges[b.Exchange] || !seen[b.Queue] {
			return fmt.Errorf("topology: binding %s → %s names an unknown exchange or queue", b.Exchange, b.Queue)
		}
	}
	for _, q := range t.Queues {
		if err := t.checkQueue(q, seen, exchanges); err != nil {
			return err
		}
	}
	return nil
}

func (t Topology) checkQueue(q Queue, queues, exchanges map[string]bool) error {
	switch {
	case q.DeadLetterTo != "" && q.DeadLetterExchange != "":
		return fmt.Errorf("topology: %s has both a dead-letter queue and a dead-letter exchange", q.Name)
	case q.DeadLetterTo != "" && !queues[q.DeadLetterTo]:
		return fmt.Errorf("topology: %s dead-letters to unknown queue %s", q.Name, q.DeadLetterTo)
	case q.DeadLetterExchange != "" && !exchanges[q.DeadLetterExchange]:
		return fmt.Errorf("topology: %s dead-letters to unknown exchange %s", q.Name, q.DeadLetterExchange)
	case q.Role == Wait && (q.TTL <= 0 || t.DeadLetterTarget(q.Name) == ""):
		return fmt.Errorf("topology: wait queue %s needs a TTL and a dead-letter route", q.Name)
	case q.Role == Delay && t.DeadLetterTarget(q.Name) == "":
		return fmt.Errorf("topology: delay queue %s needs a dead-letter route", q.Name)
	case q.MaxLength < 0:
		return fmt.Errorf("topology: %s has a negative max length", q.Name)
	}
	return nil
}

// matches reports whether routing key key matches binding key pattern
// under an exchange of kind.
func matches(kind ExchangeKind, pattern, key string) bool {
	switch kind {
	case Fanout:
		return true
	case Topic:
		return topicMatch(splitWords(pattern), splitWords(key))
	}
	return pattern == key
}

// topicMatch matches words of a routing key against a topic pattern: "*"
// stands for exactly one word, "#" for zero or more.
func topicMatch(pattern, key []string) bool {
	if len(pattern) == 0 {
		return len(key) == 0
	}
	switch pattern[0] {
	case "#":
		for i := 0; i <= len(key); i++ {
			if topicMatch(pattern[1:], key[i:]) {
				return true
			}
		}
		return false
	case "*":
		return len(key) > 0 && topicMatch(pattern[1:], key[1:])
	}
	return len(key) > 0 && key[0] == pattern[0] && topicMatch(pattern[1:], key[1:])
}

func splitWords(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ".")
}
