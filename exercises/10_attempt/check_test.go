//go:build qlabex

package attempt

import (
	"fmt"
	"math"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/exercises/check"
)

// death is one x-death entry as the broker writes it.
func death(queue, reason string, count any) amqp.Table {
	return amqp.Table{"queue": queue, "reason": reason, "count": count, "exchange": "", "routing-keys": []any{queue}}
}

// deaths is an x-death header (most recent first, as the broker keeps it).
func deaths(entries ...any) amqp.Table { return amqp.Table{"x-death": entries} }

// headerCase is one message's headers and the attempt it stands for;
// want 0 means the headers must be refused.
type headerCase struct {
	name    string
	headers amqp.Table
	want    int
}

// The messages FromDeaths reads: what the broker writes after rejects
// and TTL expiries in a wait-queue loop, and what only a forger writes.
var deathCases = []headerCase{
	{"no x-death: a first delivery", amqp.Table{"other": "x"}, 1},
	{"rejected once, expired once in the wait queue", deaths(death("email_queue_wait", "expired", int64(1)), death("email_queue", "rejected", int64(1))), 2},
	{"rejected 6 times, expired 6 times", deaths(death("email_queue", "rejected", int64(6)), death("email_queue_wait", "expired", int64(6))), 7},
	{"rejected in two queues (a chain)", deaths(death("retry.processing", "rejected", int64(1)), death("retry.wait", "expired", int64(2)), death("sequential.queue", "rejected", int64(2))), 4},
	{"rejected 14 times: the last of 15", deaths(death("email_queue_wait", "expired", int64(14)), death("email_queue", "rejected", int64(14))), 15},
	{"only expired, never rejected (a delay queue)", deaths(death("delay.5s", "expired", int64(1))), 1},
	{"x-death is a string", amqp.Table{"x-death": "rejected 3 times"}, 0},
	{"an x-death entry is not a table", deaths("email_queue"), 0},
	{"a count that is a string", deaths(death("email_queue", "rejected", "3")), 0},
	{"a negative count", deaths(death("email_queue", "rejected", int64(-5))), 0},
	{"a huge count", deaths(death("email_queue", "rejected", int64(math.MaxInt64))), 0},
	{"a huge count in an expired entry", deaths(death("email_queue_wait", "expired", int64(1e12)), death("email_queue", "rejected", int64(1))), 0},
	{"counts that add up past MaxRetries", deaths(death("a", "rejected", int64(60)), death("b", "rejected", int64(60))), 0},
}

// The messages FromHeader reads: the worker's own counter as a Go
// publisher (int64) or another client (int32) writes it, and forgeries.
var headerCases = []headerCase{
	{"no qlab-retries: a first delivery", amqp.Table{"x-death": []any{}}, 1},
	{"qlab-retries 0", amqp.Table{RetriesHeader: int64(0)}, 1},
	{"qlab-retries 3", amqp.Table{RetriesHeader: int64(3)}, 4},
	{"qlab-retries 14 as a 32-bit int", amqp.Table{RetriesHeader: int32(14)}, 15},
	{"qlab-retries 100, the limit", amqp.Table{RetriesHeader: int64(MaxRetries)}, MaxRetries + 1},
	{"qlab-retries beside an x-death it must not read", amqp.Table{RetriesHeader: int64(2), "x-death": []any{death("q", "rejected", int64(9))}}, 3},
	{"qlab-retries as a string", amqp.Table{RetriesHeader: "3"}, 0},
	{"qlab-retries as a float", amqp.Table{RetriesHeader: 3.0}, 0},
	{"a negative qlab-retries", amqp.Table{RetriesHeader: int64(-1)}, 0},
	{"qlab-retries 101, above the limit", amqp.Table{RetriesHeader: int64(MaxRetries + 1)}, 0},
	{"a huge qlab-retries", amqp.Table{RetriesHeader: int64(math.MaxInt64)}, 0},
}

func TestAttempt(t *testing.T) {
	c := check.New(t)
	read := func(what string, f func(amqp.Table) (int, error), cases []headerCase) {
		for _, tc := range cases {
			r := check.Run{Name: "the message with " + tc.name}
			n, err := f(tc.headers)
			got := fmt.Sprintf("attempt %d", n)
			if err != nil {
				got = "refused: " + err.Error()
			}
			if tc.want == 0 {
				c.That(r, what+": a header only a forger writes is refused with an error", err != nil,
					got, "refused with an error", "")
				continue
			}
			c.Expect(r, what+": the attempt is 1 + the count", got, fmt.Sprintf("attempt %d", tc.want), "")
		}
	}
	read("x-death", FromDeaths, deathCases)
	read(RetriesHeader, FromHeader, headerCases)
}
