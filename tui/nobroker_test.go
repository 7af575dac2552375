package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/queuelab/qlab/lab"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoBrokerAdviceFitsAt80Columns: at 80 columns the whole advice shows
// (wrapped, not cut), and no "waiting for the first event" suggests a run
// is coming.
func TestNoBrokerAdviceFitsAt80Columns(t *testing.T) {
	const why = "no RabbitMQ broker found: tried amqp://guest:xxxxx@127.0.0.1:5672/ (connection refused); start one with rabbitmq-server -detached or qlab broker up"
	find := func(context.Context) (string, error) { return "", errors.New(why) }
	m, err := New(Config{Lessons: []lessonsLesson{brokerLesson(true)}, Start: 98, Backend: lab.Rabbit, Broker: find})
	require.NoError(t, err)
	m = discover(t, m)
	m = step1(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	require.Equal(t, noBroker, m.run.state)
	frame := m.View()
	for _, l := range strings.Split(frame, "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(l), 80, "%q", l)
	}
	flat := strings.Join(strings.Fields(frame), " ")
	assert.Contains(t, flat, "rabbitmq-server -detached or qlab broker up · r tries again · b runs it in memory", "the advice is whole:\n%s", frame)
	assert.NotContains(t, frame, "waiting for the first event")
	assert.LessOrEqual(t, strings.Count(frame, "\n")+1, 24, "the frame still fits the terminal:\n%s", frame)
}
