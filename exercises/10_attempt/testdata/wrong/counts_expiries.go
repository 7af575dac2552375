//go:build qlabex

// Wrong: adds up every x-death count, the wait queue's expiries too, and
// trusts whatever type a header holds.
// First failure: x-death: the attempt is 1 + the count

package attempt

import (
	amqp "github.com/rabbitmq/amqp091-go"
)

func FromDeaths(headers amqp.Table) (int, error) {
	entries, _ := headers["x-death"].([]any)
	n := 1
	for _, e := range entries {
		t, _ := e.(amqp.Table)
		c, _ := t["count"].(int64)
		n += int(c)
	}
	return n, nil
}

func FromHeader(headers amqp.Table) (int, error) {
	switch c := headers[RetriesHeader].(type) {
	case int64:
		return 1 + int(c), nil
	case int32:
		return 1 + int(c), nil
	}
	return 1, nil
}
