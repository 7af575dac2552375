package rabbit

import (
	"errors"
	"fmt"
	"math"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Death is one entry of the x-death header: the broker keeps one per
// (queue, reason) and counts how often the message died there that way.
type Death struct {
	Queue       string // broker name of the queue the message died in
	Reason      string // "rejected", "expired", "maxlen" or "delivery_limit"
	Exchange    string
	RoutingKeys []string
	Count       int64 // never negative in a Deaths that ReadDeaths or ParseDeaths returned
}

// Deaths is a message's x-death history, most recent first (as the broker
// keeps it).
type Deaths []Death

// ErrBadDeaths means a message's x-death header is not what the broker
// writes: not an array of tables, or an entry whose count is not a
// non-negative integer. Someone other than the broker wrote it.
var ErrBadDeaths = errors.New("malformed x-death header")

// ParseDeaths parses the x-death header of headers strictly: no header is
// an empty history; anything the broker would not have written is an
// error wrapping ErrBadDeaths.
func ParseDeaths(headers amqp.Table) (Deaths, error) {
	v, ok := headers["x-death"]
	if !ok {
		return nil, nil
	}
	raw, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: a %T, not an array", ErrBadDeaths, v)
	}
	out := make(Deaths, 0, len(raw))
	for i, r := range raw {
		d, err := parseDeath(r)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrBadDeaths, i, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// ReadDeaths parses the x-death header of headers leniently, for display:
// malformed entries (ParseDeaths would refuse them) are skipped.
func ReadDeaths(headers amqp.Table) Deaths {
	raw, _ := headers["x-death"].([]any)
	out := make(Deaths, 0, len(raw))
	for _, r := range raw {
		if d, err := parseDeath(r); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// parseDeath reads one x-death entry: a table whose count is a
// non-negative integer; the text fields are read when they are strings.
func parseDeath(r any) (Death, error) {
	t, ok := r.(amqp.Table)
	if !ok {
		return Death{}, fmt.Errorf("a %T, not a table", r)
	}
	n, ok := integer(t["count"])
	if !ok || n < 0 {
		return Death{}, fmt.Errorf("count %v is not a non-negative integer", t["count"])
	}
	d := Death{Count: n}
	d.Queue, _ = t["queue"].(string)
	d.Reason, _ = t["reason"].(string)
	d.Exchange, _ = t["exchange"].(string)
	keys, _ := t["routing-keys"].([]any)
	for _, k := range keys {
		if s, ok := k.(string); ok {
			d.RoutingKeys = append(d.RoutingKeys, s)
		}
	}
	return d, nil
}

// Describe is the history as one line, most recent first, each entry
// "queue reason ×count" with the queue named by name (a run's broker name
// turned back into the seed's, say): "email-queue rejected ×1,
// email-retry-queue expired ×1"; "none" when the message never died.
func (ds Deaths) Describe(name func(queue string) string) string {
	if len(ds) == 0 {
		return "none"
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%s %s ×%d", name(d.Queue), d.Reason, d.Count)
	}
	return strings.Join(out, ", ")
}

// Count is how many times the message died in broker queue queue, for any
// reason (saturating at math.MaxInt64).
func (ds Deaths) Count(queue string) int64 {
	return ds.sum(func(d Death) bool { return d.Queue == queue })
}

// Reason is how many times the message died for reason ("rejected",
// "expired", …) in any queue (saturating at math.MaxInt64).
func (ds Deaths) Reason(reason string) int64 {
	return ds.sum(func(d Death) bool { return d.Reason == reason })
}

// Attempt is the processing attempt a message with this history stands
// for: 1 + the times it was rejected. More than MaxRetryCount rejects is an
// error wrapping ErrBadCount; the attempt returned then is MaxRetryCount+1,
// so a caller that ignores the error still gets a number in range.
func (ds Deaths) Attempt() (int, error) {
	rejects := ds.Reason("rejected")
	if rejects > MaxRetryCount {
		return MaxRetryCount + 1, fmt.Errorf("x-death counts %d rejects: %w (above %d)", rejects, ErrBadCount, MaxRetryCount)
	}
	return 1 + int(rejects), nil
}

func (ds Deaths) sum(match func(Death) bool) int64 {
	var n int64
	for _, d := range ds {
		if !match(d) || d.Count <= 0 {
			continue
		}
		if d.Count > math.MaxInt64-n {
			return math.MaxInt64
		}
		n += d.Count
	}
	return n
}
