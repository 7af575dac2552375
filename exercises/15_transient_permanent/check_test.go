//go:build qlabex

package classify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/seeds/birthday"
)

// sendTime is how long one call to the mail API takes (lesson time).
const sendTime = 100 * time.Millisecond

// hotLoop is how many deliveries of one message the checker allows before
// it parks the message itself: a retry that never stops would spin.
const hotLoop = 3 * (MaxRetries + 1)

// always is a job's failure count for a message that fails every attempt.
const always = 1 << 10

// job is one message of a plan: its body, the error its sends fail with
// and on how many of its first attempts.
type job struct {
	id    string
	body  string // "" for a well-formed body
	err   error
	times int
}

// permanent reports whether the job's error is one no retry can fix.
func (j job) permanent() bool {
	var api *APIError
	return j.err != nil && errors.As(j.err, &api) && api.Status != 429 && api.Status < 500
}

// wantAttempts is how many attempts the job should get: 1 when its body
// is malformed or its error permanent, else its failures plus the one
// that works, at most MaxRetries+1.
func (j job) wantAttempts() int {
	if j.body != "" || j.permanent() {
		return 1
	}
	return min(j.times+1, MaxRetries+1)
}

// describe says how the job fails, for got and want.
func (j job) describe() string {
	switch {
	case j.body != "":
		return "malformed JSON"
	case j.err == nil:
		return "sent at once"
	case j.times >= always:
		return fmt.Sprintf("%q every attempt", j.err)
	}
	return fmt.Sprintf("%q on its first %d", j.err, j.times)
}

// The errors of the mail API, each as a client sees it.
var (
	errReset = fmt.Errorf("POST /v1/send: %w",
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET})
	errTimeout   = fmt.Errorf("POST /v1/send: %w", context.DeadlineExceeded)
	errRate      = &APIError{429, "rate limited: slow down"}
	errDown      = &APIError{503, "service unavailable"}
	errGateway   = &APIError{502, "bad gateway"}
	errInvalid   = &APIError{422, "validation: birthday message has no recipient"}
	errBad       = &APIError{400, "bad request: unknown template"}
	errAuth      = &APIError{401, "auth: the API key was refused"}
	errNotFound  = &APIError{404, "not found: no such customer"}
	truncated    = `{"id":"%s","kind":"birthday","to":`
	notJSONAtAll = `birthday for %s`
)

// plan is one set of messages the checker publishes.
type plan struct {
	name string
	jobs []job
}

var plans = []plan{
	{"one of each (seed 003's error classes)", []job{
		{id: "M1"}, {id: "N1", err: errReset, times: 2}, {id: "T1", err: errTimeout, times: 1},
		{id: "L1", err: errRate, times: always}, {id: "U1", err: errDown, times: 3},
		{id: "V1", err: errInvalid, times: always}, {id: "F1", err: errNotFound, times: always},
		{id: "A1", err: errAuth, times: always}, {id: "J1", body: truncated},
	}},
	{"another mix (the network down for good, a 429 that clears at the fifth attempt)", []job{
		{id: "m01", err: errAuth, times: always}, {id: "m02", err: errRate, times: 4},
		{id: "m03", body: notJSONAtAll}, {id: "m04", err: errReset, times: always},
		{id: "m05", err: errBad, times: always}, {id: "m06"}, {id: "m07", err: errGateway, times: 5},
		{id: "m08", err: errTimeout, times: always},
	}},
}

func (p plan) named() check.Named {
	var lp lab.Plan
	for _, j := range p.jobs {
		lp.Tasks = append(lp.Tasks, j.id)
	}
	return check.Named{Name: p.name, Plan: lp}
}

func TestTransientPermanent(t *testing.T) {
	c := check.New(t)
	for _, p := range plans {
		w := &world{p: p, seen: map[string][]delivery{}}
		r := check.InMem(t, p.named(), w.run)
		c.Accounted(r, lab.FateDone, lab.FateDead)
		w.malformed(c, r)
		w.permanent(c, r)
		w.waits(c, r)
		w.budget(c, r)
		w.acked(c, r)
	}
}

// delivery is what the checker saw of one delivery: its attempt, what
// the send returned (called false when Handle did not send) and the
// decision.
type delivery struct {
	attempt int
	called  bool
	sendErr error
	sentAs  string // the id of the message Handle sent ("" if none)
	dec     flow.Decision
}

func (w *world) malformed(c *check.Checker, r check.Run) {
	for _, j := range w.p.jobs {
		if j.body == "" {
			continue
		}
		got := w.verdict(j.id)
		c.Expect(r, "malformed JSON goes to the DLQ at once with a reason, never sent", j.id+": "+got,
			j.id+": parked in "+DLQ+" after 1 attempt, not sent, with a reason", j.id)
	}
}

func (w *world) permanent(c *check.Checker, r check.Run) {
	for _, j := range w.p.jobs {
		if !j.permanent() {
			continue
		}
		got := w.verdict(j.id)
		c.Expect(r, "a permanent error (400, 401, 404, 422) goes to the DLQ at once, with the error",
			fmt.Sprintf("%s (%s): %s", j.id, j.describe(), got),
			fmt.Sprintf("%s (%s): parked in %s after 1 attempt, the reason saying %q",
				j.id, j.describe(), DLQ, j.err.(*APIError).Message), j.id)
	}
}

// waits checks every decision that sends a message round again.
func (w *world) waits(c *check.Checker, r check.Run) {
	for _, j := range w.p.jobs {
		for _, d := range w.deliveries(j.id) {
			if d.dec.Action != flow.ActRetry && d.dec.Action != flow.ActRequeue {
				continue
			}
			want := WaitQueue(FirstDelay << (d.attempt - 1))
			c.Expect(r, "retry n waits 2 s·2ⁿ (2, 4, 8, 16, 32 s) in the wait queue of that delay",
				fmt.Sprintf("%s, attempt %d failed: %s", j.id, d.attempt, check.Decision(d.dec)),
				fmt.Sprintf("%s, attempt %d failed: retry via %s", j.id, d.attempt, want), j.id)
		}
	}
}

// budget checks how many attempts each message that failed transiently
// got, and where it ended.
func (w *world) budget(c *check.Checker, r check.Run) {
	for _, j := range w.p.jobs {
		if j.err == nil || j.permanent() || j.body != "" {
			continue
		}
		want := fmt.Sprintf("sent at attempt %d", j.wantAttempts())
		if j.times > MaxRetries {
			want = fmt.Sprintf("parked in %s after %d attempts, with a reason", DLQ, MaxRetries+1)
		}
		c.Expect(r, "a transient error (network, timeout, 429, 5xx): 5 retries, then the DLQ",
			fmt.Sprintf("%s (%s): %s", j.id, j.describe(), w.verdict(j.id)),
			fmt.Sprintf("%s (%s): %s", j.id, j.describe(), want), j.id)
	}
}

func (w *world) acked(c *check.Checker, r check.Run) {
	for _, j := range w.p.jobs {
		for _, d := range w.deliveries(j.id) {
			if !d.called || d.sendErr != nil {
				continue
			}
			c.Expect(r, "a message that was sent is acked",
				fmt.Sprintf("%s, sent at attempt %d: %s", j.id, d.attempt, check.Decision(d.dec)),
				fmt.Sprintf("%s, sent at attempt %d: ack", j.id, d.attempt), j.id)
		}
	}
}

// verdict is how message id ended, in the words the checks compare:
// "sent at attempt n", "parked in DLQ after n attempts, …".
func (w *world) verdict(id string) string {
	ds := w.deliveries(id)
	if len(ds) == 0 {
		return "never delivered"
	}
	last := ds[len(ds)-1]
	switch {
	case last.dec.Action == flow.ActAck && last.called && last.sendErr == nil:
		return fmt.Sprintf("sent at attempt %d", len(ds))
	case last.dec.Action != flow.ActPark && len(ds) >= hotLoop:
		return fmt.Sprintf("still going after %d deliveries (the last: %s): the checker parked it",
			len(ds), check.Decision(last.dec))
	case last.dec.Action != flow.ActPark:
		return fmt.Sprintf("delivery %d: %s", len(ds), check.Decision(last.dec))
	}
	got := fmt.Sprintf("parked in %s after %d attempt", last.dec.To, len(ds))
	if len(ds) > 1 {
		got += "s"
	}
	sent := 0
	for _, d := range ds {
		if d.called {
			sent++
		}
	}
	j := w.job(id)
	switch {
	case j.body != "" && sent > 0:
		got += fmt.Sprintf(", sent %d time(s), as a message with id %q", sent, ds[0].sentAs)
	case j.body != "":
		got += ", not sent"
	}
	switch {
	case last.dec.Reason == "":
		return got + ", with no reason"
	case j.permanent() && strings.Contains(last.dec.Reason, j.err.(*APIError).Message):
		return got + fmt.Sprintf(", the reason saying %q", j.err.(*APIError).Message)
	case j.permanent():
		return got + fmt.Sprintf(", the reason %q", last.dec.Reason)
	}
	return got + ", with a reason"
}

// world is one run: Q19's topology in memory, one worker running the
// student's Handle, and a mail API that fails as the plan says.
type world struct {
	p  plan
	st *lab.Stream

	mu   sync.Mutex
	seen map[string][]delivery
}

func (w *world) job(id string) job {
	for _, j := range w.p.jobs {
		if j.id == id {
			return j
		}
	}
	return job{}
}

func (w *world) deliveries(id string) []delivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]delivery(nil), w.seen[id]...)
}

// body is message id's JSON as the scheduler published it.
func (w *world) body(id string) []byte {
	if j := w.job(id); j.body != "" {
		return []byte(fmt.Sprintf(j.body, id))
	}
	m := Message{ID: id, Kind: "birthday", To: strings.ToLower(id) + "@example.com",
		Name: "Customer " + id}
	b, _ := json.Marshal(m)
	return b
}

func (w *world) run(ctx context.Context, s *lab.Stream) error {
	w.st = s
	b := inmem.NewFlow(ctx, s, len(w.p.jobs)+1)
	defer b.Close(context.Background())
	if err := b.Declare(ctx, birthday.RetryTopology()); err != nil {
		return err
	}
	// The worker counts retries in a header of its own (Q19's part a), so
	// it may send a message into any of the wait queues.
	c := flow.Consumer{Queue: Queue, Actor: "Worker", RetryHeader: "qlab-retries", Handle: w.handle}
	if err := b.Consume(ctx, c); err != nil {
		return err
	}
	for _, j := range w.p.jobs {
		if err := b.PublishTo(ctx, birthday.Scheduler, birthday.Exchange, "birthday", j.id); err != nil {
			return err
		}
	}
	return b.Wait(ctx)
}

// handle runs the student's Handle on delivery d, with the message's body
// (memory carries none), and records what it did.
func (w *world) handle(ctx context.Context, d *flow.Delivery) flow.Decision {
	if n := len(w.deliveries(d.Task)); n >= hotLoop {
		return flow.Park(DLQ, fmt.Sprintf("stopped by the checker: delivered %d times", n))
	}
	d.Body = w.body(d.Task)
	rec := delivery{attempt: d.Attempt}
	e := d.Event("Worker")
	e.Kind = lab.Started
	w.st.Emit(e)
	rec.dec = Handle(ctx, d, func(ctx context.Context, m Message) error {
		if rec.called {
			return errors.New("one send per delivery: send was already called")
		}
		rec.called, rec.sentAs = true, m.ID
		rec.sendErr = w.send(ctx, d, m)
		return rec.sendErr
	})
	switch {
	case rec.called && rec.sendErr == nil:
		e.Kind, e.Note = lab.Succeeded, "sent by the mail API"
	case rec.called:
		e.Kind, e.Note = lab.Failed, rec.sendErr.Error()
	default:
		e.Kind, e.Note = lab.Rejected, "not sent: "+check.Decision(rec.dec)
	}
	w.st.Emit(e)
	w.mu.Lock()
	w.seen[d.Task] = append(w.seen[d.Task], rec)
	w.mu.Unlock()
	return rec.dec
}

// send is the mail API: it takes sendTime and fails as the plan says; a
// message that does not name the delivery's (a body that did not parse)
// is refused.
func (w *world) send(ctx context.Context, d *flow.Delivery, m Message) error {
	if err := w.st.Clock().Wait(ctx, sendTime); err != nil {
		return err
	}
	j := w.job(d.Task)
	switch {
	case m.ID != d.Task:
		return &APIError{422, fmt.Sprintf("validation: message %q is not %s", m.ID, d.Task)}
	case j.err != nil && d.Attempt <= j.times:
		return j.err
	}
	w.st.Emit(lab.Event{Kind: lab.Mailed, Task: d.Task, Actor: "Mail-API",
		Note: "greeting to " + m.To})
	return nil
}
