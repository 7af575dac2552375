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
