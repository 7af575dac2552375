//go:build qlabex

// Wrong: x-death is read right, but qlab-retries is believed whatever it
// holds: a negative or a huge count, a string read as attempt 1.
// First failure: qlab-retries: a header only a forger writes is refused with an error

package attempt

import (
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

func FromDeaths(headers amqp.Table) (int, error) {
	v, ok := headers["x-death"]
	if !ok {
		return 1, nil
	}
	entries, ok := v.([]any)
	if !ok {
		return 0, fmt.Errorf("x-death is a %T", v)
	}
	var rejects int64
	for _, e := range entries {
		t, ok := e.(amqp.Table)
		if !ok {
			return 0, fmt.Errorf("x-death entry is a %T", e)
		}
		n, ok := t["count"].(int64)
		if !ok || n < 0 || n > MaxRetries {
			return 0, fmt.Errorf("bad count %v", t["count"])
		}
		if t["reason"] == "rejected" {
			rejects += n
		}
		if rejects > MaxRetries {
			return 0, fmt.Errorf("too many rejects")
		}
	}
	return 1 + int(rejects), nil
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
