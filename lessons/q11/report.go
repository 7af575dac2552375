package q11

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/mail"
)

// mailRow is what the lesson measured about one scheduled mail, in lesson
// time since the run started.
type mailRow struct {
	strategy      string // "a", "b", "c"
	task          string
	scheduledTime string        // as requested (ISO-8601)
	due           time.Duration // when it should go out: its scheduledTime, or the request if that was past
	sentAt        time.Duration // when the mail worker sent it (first time)
	sent          bool
	path          []string // where it waited: memory, mail.delay, the level queues
}

// lateness is how long after its due time the mail went out.
func (r mailRow) lateness() time.Duration { return r.sentAt - r.due }

// mailBook collects the rows; the mail worker and routers write to it
// from their goroutines.
type mailBook struct {
	mu   sync.Mutex
	rows []*mailRow
}

func (b *mailBook) add(r mailRow) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rows = append(b.rows, &r)
}

func (b *mailBook) find(task string) *mailRow {
	for _, r := range b.rows {
		if r.task == task {
			return r
		}
	}
	return nil
}

// delivered notes the first time task's mail was sent.
func (b *mailBook) delivered(task string, at time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.find(task); r != nil && !r.sent {
		r.sent, r.sentAt = true, at
	}
}

// hop notes that task went on to wait in queue.
func (b *mailBook) hop(task, queue string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.find(task); r != nil {
		r.path = append(r.path, queue)
	}
}

// strategy returns copies of the rows of strategy s, in request order.
func (b *mailBook) strategy(s string) []mailRow {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []mailRow
	for _, r := range b.rows {
		if r.strategy == s {
			out = append(out, *r)
		}
	}
	return out
}

// q11Strategies name the three runs for the tables.
var q11Strategies = []struct{ id, title, note string }{
	{"a", "(a) In-process timer (the seed's way)",
		"The timers are on time, but they live in the scheduler's memory: it stopped at %s and the mails it still held were lost."},
	{"b", "(b) One delay queue, per-message TTL",
		"RabbitMQ expires a message only once it reaches the head of its queue: the 1 s mail sat behind the 5 s one and went out when that one did (classic queue here; a quorum queue does the same on 3.10.8 and 4.3.6)."},
	{"c", "(c) Fixed delay levels + stateless router",
		"Each wait queue has one TTL, so it expires in FIFO order; the router re-routes by the %s header after each hop " +
			"(the lab's own header: no x- prefix, since RabbitMQ treats x- headers as the broker's, as Q13 shows)."},
}

// report adds one table per strategy and a comparison.
func (l *q11Lesson) report(badRequest error) {
	var cmp [][]string
	for _, st := range q11Strategies {
		rows := l.book.strategy(st.id)
		l.env.Report(l.strategyTable(st.id, st.title, st.note, rows))
		cmp = append(cmp, compareRow(st.title, rows))
	}
	notes := []string{"Lateness is sent minus due, in lesson time (a mail due in the past is due when requested).",
		"Not shown: the rabbitmq-delayed-message-exchange plugin (an x-delay header on an x-delayed-message exchange). Its team no longer maintains it beyond new builds, and it keeps delayed messages on one node, unreplicated: they are lost with that node."}
	if badRequest != nil {
		notes = append(notes, "Refused before any mail existed: "+badRequest.Error())
	}
	l.env.Report(render.Table{Title: "Scheduled emails: the three strategies",
		Header: []string{"strategy", "sent", "lost", "worst lateness"}, Rows: cmp, Notes: notes})
}

func (l *q11Lesson) strategyTable(id, title, note string, rows []mailRow) render.Table {
	t := render.Table{Title: title, Header: []string{"mail", "scheduledTime", "due", "sent", "late by", "waited in"}}
	for _, r := range rows {
		sent, late := "lost", "never sent"
		if r.sent {
			sent, late = render.Stamp(r.sentAt.Milliseconds()), formatLateness(r.lateness())
		}
		t.Rows = append(t.Rows, []string{r.task, r.scheduledTime, render.Stamp(r.due.Milliseconds()), sent, late, strings.Join(r.path, " → ")})
	}
	switch id {
	case "a":
		t.Notes = []string{fmt.Sprintf(note, render.Stamp(l.timerStop.Milliseconds()))}
	case "c":
		t.Notes = []string{fmt.Sprintf(note, mail.DueHeader), fmt.Sprintf(
			"The scheduler's connection was closed at %s and a new scheduler (new connection, new router) was up at %s; no mail was held by either.",
			render.Stamp(l.restartStop.Milliseconds()), render.Stamp(l.restartStart.Milliseconds()))}
	default:
		t.Notes = []string{note}
	}
	return t
}

func compareRow(title string, rows []mailRow) []string {
	sent, lost := 0, 0
	var worst time.Duration
	for _, r := range rows {
		if !r.sent {
			lost++
			continue
		}
		sent++
		worst = max(worst, r.lateness())
	}
	return []string{title, fmt.Sprint(sent), fmt.Sprint(lost), formatLateness(worst)}
}

// formatLateness prints a lateness to the millisecond with its sign.
func formatLateness(d time.Duration) string {
	return fmt.Sprintf("%+.3fs", d.Seconds())
}
