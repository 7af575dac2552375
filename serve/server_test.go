package serve

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lessons/q11"
	"github.com/queuelab/qlab/rabbit"
)

// published is one message a recordingPublisher was given.
type published struct {
	route Route
	msg   amqp.Publishing
}

// recordingPublisher stands at the API's seam to the broker and keeps
// what the API handed it, so a test can see exactly what would reach the
// queue. (The broker half is tested against the real broker: broker_test.)
type recordingPublisher struct {
	mu   sync.Mutex
	msgs []published
}

func (p *recordingPublisher) Publish(_ context.Context, r Route, msg amqp.Publishing) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, published{r, msg})
	return nil
}

func (p *recordingPublisher) Confirms() bool { return true }

func (p *recordingPublisher) all() []published {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]published(nil), p.msgs...)
}

// testNow is the fixed clock of the mail tests.
var testNow = time.Date(2026, 2, 8, 11, 39, 41, 0, time.UTC)

// newTestServer is a Server on pub recording its events in rec.
func newTestServer(pub Publisher, rec *lab.Recorder) *Server {
	s := New(pub, lab.NewStream("serve", lab.Rabbit, lab.NewClock(1), rec))
	s.now = func() time.Time { return testNow }
	return s
}

// do sends one request to h and returns the status and the decoded JSON
// answer, failing the test if the answer is not a JSON object.
func do(t *testing.T, h http.Handler, method, path, body string) (int, map[string]string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(body)))
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	var got map[string]string
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got), "answer %q", w.Body.String())
	return w.Code, got
}

func TestServeUserIsPublishedAndAnsweredWithItsID(t *testing.T) {
	pub := &recordingPublisher{}
	var rec lab.Recorder
	code, got := do(t, newTestServer(pub, &rec), http.MethodPost, UsersPath, `{"name":"John Silva","email":"john@email.com"}`)

	require.Equal(t, http.StatusOK, code)
	msgs := pub.all()
	require.Len(t, msgs, 1)
	assert.Equal(t, Route{Exchange: RaffleExchange, Key: RaffleQueue}, msgs[0].route)
	var u User
	require.NoError(t, json.Unmarshal(msgs[0].msg.Body, &u))
	assert.Equal(t, User{ID: got["id"], Name: "John Silva", Email: "john@email.com"}, u, "the seed's message body")
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, got["id"], "a v4 UUID")
	assert.Equal(t, got["id"], msgs[0].msg.MessageId)
	assert.Equal(t, uint8(amqp.Persistent), msgs[0].msg.DeliveryMode)
	require.Len(t, rec.Events, 1)
	assert.Equal(t, lab.Enqueued, rec.Events[0].Kind)
	assert.Equal(t, got["id"], rec.Events[0].Task)
	assert.Equal(t, RaffleQueue, rec.Events[0].Queue)
}

func TestServeEachUserGetsItsOwnID(t *testing.T) {
	pub := &recordingPublisher{}
	s := newTestServer(pub, &lab.Recorder{})
	ids := map[string]bool{}
	for range 20 {
		code, got := do(t, s, http.MethodPost, UsersPath, `{"name":"A","email":"a@example.com"}`)
		require.Equal(t, http.StatusOK, code)
		ids[got["id"]] = true
	}
	assert.Len(t, ids, 20)
}

func TestServeBadInputIs400AndPublishesNothing(t *testing.T) {
	cases := []struct{ name, path, body, want string }{
		{"malformed JSON", UsersPath, `{"name": "John", "email": `, "malformed JSON"},
		{"not an object", UsersPath, `["John","john@example.com"]`, "malformed JSON"},
		{"empty body", UsersPath, ``, "empty body"},
		{"two objects", UsersPath, `{"name":"A","email":"a@example.com"}{}`, "more than one value"},
		{"trailing junk", UsersPath, `{"name":"A","email":"a@example.com"} x`, "malformed JSON"},
		{"missing name", UsersPath, `{"email":"a@example.com"}`, `missing "name"`},
		{"blank name", UsersPath, `{"name":"  ","email":"a@example.com"}`, `missing "name"`},
		{"missing email", UsersPath, `{"name":"A"}`, `missing "email"`},
		{"invalid email", UsersPath, `{"name":"A","email":"not-an-email"}`, "not an email address"},
		{"email with a display name", UsersPath, `{"name":"A","email":"A <a@example.com>"}`, "not an email address"},
		{"email without a domain dot", UsersPath, `{"name":"A","email":"a@localhost"}`, "not an email address"},
		{"unknown field", UsersPath, `{"name":"A","email":"a@example.com","admin":true}`, "unknown field"},
		{"client-chosen id", UsersPath, `{"id":"x","name":"A","email":"a@example.com"}`, "given by the API"},
		{"wrong type", UsersPath, `{"name":7,"email":"a@example.com"}`, "malformed JSON"},
		{"name too long", UsersPath, `{"name":"` + strings.Repeat("n", maxName+1) + `","email":"a@example.com"}`, "longer than"},
		{"mail: unparsable time", SchedulePath, `{"to":"r@example.com","subject":"s","scheduledTime":"next tuesday 9am"}`, "not an ISO-8601"},
		{"mail: past", SchedulePath, `{"to":"r@example.com","subject":"s","scheduledTime":"2026-02-08T11:30:00Z"}`, "in the past"},
		{"mail: years ahead", SchedulePath, `{"to":"r@example.com","subject":"s","scheduledTime":"2031-02-08T11:39:51Z"}`, "ahead"},
		{"mail: missing time", SchedulePath, `{"to":"r@example.com","subject":"s"}`, `missing "scheduledTime"`},
		{"mail: missing to", SchedulePath, `{"subject":"s","scheduledTime":"2026-02-08T11:39:51Z"}`, `missing "to"`},
		{"mail: bad to", SchedulePath, `{"to":"r@","subject":"s","scheduledTime":"2026-02-08T11:39:51Z"}`, "not an email"},
		{"mail: missing subject", SchedulePath, `{"to":"r@example.com","scheduledTime":"2026-02-08T11:39:51Z"}`, `missing "subject"`},
		{"mail: snake_case field", SchedulePath, `{"to":"r@example.com","subject":"s","scheduled_time":"2026-02-08T11:39:51Z"}`, "unknown field"},
		{"mail: client-chosen task", SchedulePath, `{"task":"t","to":"r@example.com","subject":"s","scheduledTime":"2026-02-08T11:39:51Z"}`, "given by the API"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pub := &recordingPublisher{}
			var rec lab.Recorder
			code, got := do(t, newTestServer(pub, &rec), http.MethodPost, tc.path, tc.body)
			assert.Equal(t, http.StatusBadRequest, code)
			assert.Contains(t, got["error"], tc.want)
			assert.Empty(t, pub.all(), "nothing bad reaches the queue")
			require.Len(t, rec.Events, 1)
			assert.Equal(t, lab.Failed, rec.Events[0].Kind, "the refusal is in the stream")
			assert.Contains(t, rec.Events[0].Note, "→ 400")
		})
	}
}

func TestServeWrongMethodIs405AndUnknownPathIs404(t *testing.T) {
	pub := &recordingPublisher{}
	s := newTestServer(pub, &lab.Recorder{})
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(m, UsersPath, strings.NewReader(`{"name":"A","email":"a@example.com"}`)))
		assert.Equal(t, http.StatusMethodNotAllowed, w.Code, m)
		assert.Equal(t, http.MethodPost, w.Header().Get("Allow"))
		assert.Contains(t, w.Body.String(), `"error"`)
	}
	code, got := do(t, s, http.MethodPost, "/api/v1/userz", `{"name":"A","email":"a@example.com"}`)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, got["error"], UsersPath, "says where the API is")
	assert.Empty(t, pub.all())
}

func TestServeBodyOverTheLimitIs413(t *testing.T) {
	pub := &recordingPublisher{}
	body := `{"name":"` + strings.Repeat("a", MaxBody) + `","email":"a@example.com"}`
	code, got := do(t, newTestServer(pub, &lab.Recorder{}), http.MethodPost, UsersPath, body)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)
	assert.Contains(t, got["error"], "larger than")
	assert.Empty(t, pub.all())
}

func TestServeMailGoesToItsFirstHop(t *testing.T) {
	cases := []struct {
		name, scheduled, wantQueue string
		wantDelay                  time.Duration
	}{
		{"due in 10 s: the 8 s level", "2026-02-08T11:39:51Z", "mail.wait.8s", 10 * time.Second},
		{"due in 3 s, another zone: the 2 s level", "2026-02-08T12:39:44+01:00", "mail.wait.2s", 3 * time.Second},
		{"due now: straight to mail.queue", "2026-02-08T11:39:41Z", q11.MailQueue, 0},
		{"a few seconds late: due, sent at once like the seed", "2026-02-08T11:39:30Z", q11.MailQueue, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pub := &recordingPublisher{}
			var rec lab.Recorder
			body := `{"to":"recipient@example.com","subject":"Hello","scheduledTime":"` + tc.scheduled + `"}`
			code, got := do(t, newTestServer(pub, &rec), http.MethodPost, SchedulePath, body)
			require.Equal(t, http.StatusOK, code, got["error"])
			msgs := pub.all()
			require.Len(t, msgs, 1)
			assert.Equal(t, Route{Key: tc.wantQueue}, msgs[0].route, "the default exchange, to the queue")
			assert.Equal(t, tc.scheduled, msgs[0].msg.Headers[q11.DueHeader], "the due time travels in the header")
			var m q11.Mail
			require.NoError(t, json.Unmarshal(msgs[0].msg.Body, &m))
			assert.Equal(t, q11.Mail{Task: got["id"], To: "recipient@example.com", Subject: "Hello", ScheduledTime: tc.scheduled}, m)
			assert.Equal(t, tc.wantQueue, got["queue"])
			assert.Equal(t, lab.Enqueued, rec.Events[0].Kind)
			assert.Equal(t, tc.wantQueue, rec.Events[0].Queue)
			if tc.wantDelay > 0 {
				require.Len(t, rec.Events, 2)
				assert.Equal(t, lab.Scheduled, rec.Events[1].Kind)
				assert.Equal(t, tc.wantDelay.Milliseconds(), rec.Events[1].DelayMs)
			} else {
				assert.Len(t, rec.Events, 1, "a due mail is not scheduled")
			}
		})
	}
}

// closedPortURL is an AMQP URL at a port nothing listens on.
func closedPortURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "amqp://guest:guest@" + addr + "/"
}

func TestServeBrokerUnreachableIs503WithAJSONError(t *testing.T) {
	for _, confirms := range []bool{true, false} {
		pub := NewBrokerPublisher(closedPortURL(t), rabbit.RunNames(), confirms, nil)
		var rec lab.Recorder
		s := newTestServer(pub, &rec)
		start := time.Now()
		code, got := do(t, s, http.MethodPost, UsersPath, `{"name":"A","email":"a@example.com"}`)
		assert.Equal(t, http.StatusServiceUnavailable, code, "confirms=%v", confirms)
		assert.Equal(t, OutcomeNotPublished, got["outcome"], "confirms=%v", confirms)
		assert.NotContains(t, got, "id", "no id: nothing was promised")
		assert.NotContains(t, got["error"], "guest", "the answer names no broker user")
		assert.NotContains(t, got["error"], "amqp://", "the answer names no broker URL")
		assert.Less(t, time.Since(start), PublishTimeout+time.Second, "bounded")
		require.Len(t, rec.Events, 1)
		assert.Equal(t, lab.Failed, rec.Events[0].Kind)
		assert.Contains(t, rec.Events[0].Note, "→ 503")

		code, _ = do(t, s, http.MethodPost, UsersPath, `{"name":"A"}`)
		assert.Equal(t, http.StatusBadRequest, code, "bad input is a 400 with or without a broker")
	}
}

// TestServeBrokerThatNeverAnswersIs503WithinTheBound: a port that accepts
// connections and never speaks AMQP (a broker hung, a network black hole).
// Requests that arrive together each end in a 503 within their own
// bound, not one after another behind the first.
func TestServeBrokerThatNeverAnswersIs503WithinTheBound(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	pub := NewBrokerPublisher("amqp://guest:guest@"+ln.Addr().String()+"/", rabbit.RunNames(), true, nil)
	s := newTestServer(pub, &lab.Recorder{})
	start := time.Now()
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := httptest.NewRecorder()
			s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, UsersPath, strings.NewReader(`{"name":"A","email":"a@example.com"}`)))
			codes[i] = w.Code
		}()
	}
	wg.Wait()
	assert.Equal(t, []int{503, 503, 503, 503}, codes)
	assert.Less(t, time.Since(start), PublishTimeout+2*time.Second, "each request within its own bound")
}
