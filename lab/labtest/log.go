package labtest

import (
	"context"
	"log/slog"
	"slices"
	"sync"
)

// Log is a slog.Handler that keeps the message of every record at Info
// and above, as the TUI's status line shows a run's log: give a run
// slog.New(&log) as its Options.Logger and read Messages after. It is
// safe for concurrent use; its zero value is ready.
type Log struct {
	mu   sync.Mutex
	msgs []string
}

// Enabled reports whether level reaches the status line (Info and above).
func (l *Log) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelInfo }

// Handle keeps r's message.
func (l *Log) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}

// WithAttrs returns l itself: only messages are kept.
func (l *Log) WithAttrs([]slog.Attr) slog.Handler { return l }

// WithGroup returns l itself: only messages are kept.
func (l *Log) WithGroup(string) slog.Handler { return l }

// Messages is a copy of the messages kept so far, in order.
func (l *Log) Messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.msgs)
}
