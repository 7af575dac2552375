package serve

import (
	"context"
	"encoding/json"
	"io"
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
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/mail"
	"github.com/queuelab/qlab/seeds/raffle"
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
	return doAs(t, h, method, path, "application/json", body)
}

// doAs is do with the request's Content-Type.
func doAs(t *testing.T, h http.Handler, method, path, contentType, body string) (int, map[string]string) {
	t.Helper()
	w := httptest.NewRecorder()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	h.ServeHTTP(w, r)
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
	assert.Equal(t, Route{Exchange: raffle.Exchange, Key: raffle.Queue}, msgs[0].route)
	var u User
	require.NoError(t, json.Unmarshal(msgs[0].msg.Body, &u))
	assert.Equal(t, User{ID: got["id"], Name: "John Silva", Email: "john@email.com"}, u, "the seed's message body")
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, got["id"], "a v4 UUID")
	assert.Equal(t, got["id"], msgs[0].msg.MessageId)
	assert.Equal(t, uint8(amqp.Persistent), msgs[0].msg.DeliveryMode)
	require.Len(t, rec.Events, 1)
	assert.Equal(t, lab.Enqueued, rec.Events[0].Kind)
	assert.Equal(t, got["id"], rec.Events[0].Task)
	assert.Equal(t, raffle.Queue, rec.Events[0].Queue)
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
		{"duplicate key", UsersPath, `{"name":"A","email":"a@example.com","name":"B"}`, `key "name" given twice`},
		{"duplicate key, same value", UsersPath, `{"name":"A","name":"A","email":"a@example.com"}`, "given twice"},
		{"key in upper case", UsersPath, `{"NAME":"A","email":"a@example.com"}`, `keys are case-sensitive, want "name"`},
		{"key in title case", UsersPath, `{"name":"A","Email":"a@example.com"}`, `want "email"`},
		{"NUL in a name", UsersPath, `{"name":"A\u0000B","email":"a@example.com"}`, "U+0000"},
		{"ESC in a name", UsersPath, `{"name":"\u001b[31mred","email":"a@example.com"}`, "U+001B"},
		{"right-to-left override in a name", UsersPath, `{"name":"evil\u202egnp.exe","email":"a@example.com"}`, "U+202E"},
		{"left-to-right isolate in a name", UsersPath, `{"name":"a\u2066b","email":"a@example.com"}`, "U+2066"},
		{"a C1 control in a name", UsersPath, `{"name":"a\u009bb","email":"a@example.com"}`, "U+009B"},
		{"a tab in a name", UsersPath, `{"name":"a\tb","email":"a@example.com"}`, "U+0009"},
		{"DEL in a name", UsersPath, `{"name":"a\u007fb","email":"a@example.com"}`, "U+007F"},
		{"line separator in a subject", SchedulePath, `{"to":"r@example.com","subject":"a\u2028b","scheduledTime":"2026-02-08T11:39:51Z"}`, "U+2028"},
		{"override in an email", UsersPath, `{"name":"A","email":"\"a\u202e\"@example.com"}`, "U+202E"},
		{"mail: key in another case", SchedulePath, `{"to":"r@example.com","subject":"s","scheduledtime":"2026-02-08T11:39:51Z"}`, `want "scheduledTime"`},
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

// TestServeNonJSONBodyIs415: the seed's API parses JSON only. A JSON
// body sent as text/plain, or as curl's default form encoding, is refused
// with a clear answer, not read as if it were JSON.
func TestServeNonJSONBodyIs415(t *testing.T) {
	user := `{"name":"A","email":"a@example.com"}`
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "", "application/jsonx", "application/json; charset"} {
		pub := &recordingPublisher{}
		var rec lab.Recorder
		code, got := doAs(t, newTestServer(pub, &rec), http.MethodPost, UsersPath, ct, user)
		assert.Equal(t, http.StatusUnsupportedMediaType, code, "Content-Type %q", ct)
		assert.Contains(t, got["error"], "application/json", ct)
		assert.Empty(t, pub.all(), ct)
		assert.Contains(t, rec.Events[0].Note, "→ 415", ct)
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
		code, got := doAs(t, newTestServer(&recordingPublisher{}, &lab.Recorder{}), http.MethodPost, UsersPath, ct, user)
		assert.Equal(t, http.StatusOK, code, "Content-Type %q: %s", ct, got["error"])
	}
}

// TestServeYearOneIsASaneMessage: a time.Duration cannot hold the span
// back to year 1; the answer says it in words, not as the saturated
// "2562047h47m16.85s".
func TestServeYearOneIsASaneMessage(t *testing.T) {
	cases := map[string]string{
		"0001-01-01T00:00:00Z": "more than 290 years in the past",
		"2026-02-08T11:00:00Z": "39m41s in the past",
		"2026-02-07T11:39:41Z": "24 hours in the past",
		"2025-02-08T11:39:41Z": "365 days in the past",
		"1876-02-08T11:39:41Z": "54787 days in the past",
	}
	for when, want := range cases {
		code, got := do(t, newTestServer(&recordingPublisher{}, &lab.Recorder{}), http.MethodPost, SchedulePath,
			`{"to":"r@example.com","subject":"s","scheduledTime":"`+when+`"}`)
		assert.Equal(t, http.StatusBadRequest, code, when)
		assert.Contains(t, got["error"], want, when)
		assert.NotContains(t, got["error"], "2562047h", when)
	}
}

// TestServeSlowClientGetsAnAnswer: a client whose body does not arrive
// gets a 408 with a JSON body before the connection closes (it used to
// be cut off at the server's read bound with nothing, since the write
// bound ran out at the same moment); one whose headers do not arrive
// gets net/http's own 400 with a body.
func TestServeSlowClientGetsAnAnswer(t *testing.T) {
	t.Parallel() // waits out the body's 5 s bound: beside the others
	var rec lab.Recorder
	base, _, _ := serveInBackground(t, newTestServer(&recordingPublisher{}, &rec), DrainTimeout)
	addr := strings.TrimPrefix(base, "http://")
	cases := []struct{ name, send, want string }{
		{"body", "POST " + UsersPath + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":",
			"HTTP/1.1 408 Request Timeout"},
		{"headers", "POST " + UsersPath + " HTTP/1.1\r\nHost: x\r\nContent-Ty", "HTTP/1.1 400 Bad Request"},
	}
	for _, c := range cases {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		start := time.Now()
		_, err = conn.Write([]byte(c.send))
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
		answer, err := io.ReadAll(conn)
		conn.Close()
		require.NoError(t, err, c.name)
		assert.True(t, strings.HasPrefix(string(answer), c.want), "%s: got %q", c.name, answer)
		assert.Less(t, time.Since(start), 8*time.Second, "%s: answered within its bound", c.name)
		if c.name == "body" {
			_, body, _ := strings.Cut(string(answer), "\r\n\r\n")
			assert.Contains(t, body, `"error":"the body did not arrive within 5s"`)
		}
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
		{"due now: straight to mail.queue", "2026-02-08T11:39:41Z", mail.MailQueue, 0},
		{"a few seconds late: due, sent at once like the seed", "2026-02-08T11:39:30Z", mail.MailQueue, 0},
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
			assert.Equal(t, tc.scheduled, msgs[0].msg.Headers[mail.DueHeader], "the due time travels in the header")
			var m mail.Mail
			require.NoError(t, json.Unmarshal(msgs[0].msg.Body, &m))
			assert.Equal(t, mail.Mail{Task: got["id"], To: "recipient@example.com", Subject: "Hello", ScheduledTime: tc.scheduled}, m)
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
	t.Parallel() // waits out the publish bound: beside the others
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
			r := httptest.NewRequest(http.MethodPost, UsersPath, strings.NewReader(`{"name":"A","email":"a@example.com"}`))
			r.Header.Set("Content-Type", "application/json")
			s.ServeHTTP(w, r)
			codes[i] = w.Code
		}()
	}
	wg.Wait()
	assert.Equal(t, []int{503, 503, 503, 503}, codes)
	assert.Less(t, time.Since(start), PublishTimeout+2*time.Second, "each request within its own bound")
}
