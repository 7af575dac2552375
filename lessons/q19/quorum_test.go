package q19

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/birthday"
)

// TestQ19QuorumNackByVersion holds what the fake delay's nack does to a
// quorum queue's count on each version: RabbitMQ 3.10.8 counts it
// (0 1 2 3), 4.3 leaves x-delivery-count unwritten and counts the take
// in x-acquired-count; a reject counts on both.
func TestQ19QuorumNackByVersion(t *testing.T) {
	want := map[string][][]string{
		"3.10": {{"basic.nack, requeue", "0 1 2 3", "- - - -"}, {"basic.reject, requeue", "0 1 2 3", "- - - -"},
			{"channel closed, unacked", "0 1 2 3", "- - - -"}},
		"4.3": {{"basic.nack, requeue", "- - - -", "- 1 2 3"}, {"basic.reject, requeue", "- 1 2 3", "- 1 2 3"},
			{"channel closed, unacked", "- 1 2 3", "- 1 2 3"}},
	}
	for line, rows := range want {
		t.Run(line, func(t *testing.T) {
			url, version := rabbittest.NeedVersion(t, line)
			var tab render.Table
			l := Lesson
			l.Rabbit = func(ctx context.Context, env *lesson.Env) (err error) {
				tab, err = quorumReturns(ctx, env)
				return err
			}
			lessontest.RunRabbit(t, l, lesson.Options{Broker: url})
			assert.Equal(t, rows, tab.Rows)
			assert.Contains(t, tab.Title, "RabbitMQ "+version)
			assert.Contains(t, strings.Join(tab.Notes, " "), "RabbitMQ "+version+" (this broker)")
		})
	}
}

// TestQuorumStallByVersion runs part (b)'s timer-then-nack load on the
// seed's quorum queue on each version. On 3.10.8 the quorum queue appends
// what a nack gives back, so QH gets the first slot freed, well before
// the limit ends, and x-delivery-count counts the returns; on 4.3 it
// gives the nacked message out again first, so QH waits out the limit as
// on a classic queue, and a nack writes no x-delivery-count.
func TestQuorumStallByVersion(t *testing.T) {
	for _, line := range []string{"3.10", "4.3"} {
		t.Run(line, func(t *testing.T) {
			url, version := rabbittest.NeedVersion(t, line)
			var m stalled
			l := Lesson
			l.Rabbit = func(ctx context.Context, env *lesson.Env) (err error) {
				m, err = quorumStall(ctx, env)
				return err
			}
			lessontest.RunRabbit(t, l, lesson.Options{Broker: url})
			assert.Equal(t, version, m.version)
			assert.True(t, m.quorum)
			assert.Positive(t, m.redelivered)
			assert.GreaterOrEqual(t, m.lastSent, limitFor, "the five are sent once the limit ends")
			if line == "3.10" {
				// Any time before 4.3's bound below tells the two apart;
				// on time it is the first nack's, one delay in.
				assert.Less(t, m.firstH, limitFor-birthday.Delay(0), "QH gets the first slot a nack frees")
				assert.Positive(t, m.deliveryCount, "3.10.8 counts every return")
				return
			}
			assert.GreaterOrEqual(t, m.firstH, limitFor-birthday.Delay(0), "QH waits behind the five")
			assert.Equal(t, -1, m.deliveryCount, "4.3 writes no x-delivery-count after a nack")
		})
	}
}
