package rabbit

import amqp "github.com/rabbitmq/amqp091-go"

// Death is one entry of the x-death header: the broker keeps one per
// (queue, reason) and counts how often the message died there that way.
type Death struct {
	Queue       string // broker name of the queue the message died in
	Reason      string // "rejected", "expired", "maxlen" or "delivery_limit"
	Exchange    string
	RoutingKeys []string
	Count       int64
}

// Deaths is a message's x-death history, most recent first (as the broker
// keeps it).
type Deaths []Death

// ReadDeaths parses the x-death header of headers; missing or malformed
// entries are skipped.
func ReadDeaths(headers amqp.Table) Deaths {
	raw, _ := headers["x-death"].([]any)
	out := make(Deaths, 0, len(raw))
	for _, r := range raw {
		t, ok := r.(amqp.Table)
		if !ok {
			continue
		}
		d := Death{Count: toInt64(t["count"])}
		d.Queue, _ = t["queue"].(string)
		d.Reason, _ = t["reason"].(string)
		d.Exchange, _ = t["exchange"].(string)
		keys, _ := t["routing-keys"].([]any)
		for _, k := range keys {
			if s, ok := k.(string); ok {
				d.RoutingKeys = append(d.RoutingKeys, s)
			}
		}
		out = append(out, d)
	}
	return out
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int32:
		return int64(n)
	case int:
		return int64(n)
	case int16:
		return int64(n)
	case int8:
		return int64(n)
	case uint8:
		return int64(n)
	}
	return 0
}

// Count is how many times the message died in broker queue queue, for any
// reason.
func (ds Deaths) Count(queue string) int64 {
	var n int64
	for _, d := range ds {
		if d.Queue == queue {
			n += d.Count
		}
	}
	return n
}

// Reason is how many times the message died for reason ("rejected",
// "expired", …) in any queue.
func (ds Deaths) Reason(reason string) int64 {
	var n int64
	for _, d := range ds {
		if d.Reason == reason {
			n += d.Count
		}
	}
	return n
}
