package serve

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/mail"
	"github.com/queuelab/qlab/seeds/raffle"
)

// The API's paths.
const (
	UsersPath    = "/api/v1/users"
	SchedulePath = "/api/sequential/schedule-email"
)

// Actor is the name the API's events carry.
const Actor = "HTTP-API"

// BodyTimeout bounds the wait for a request's body, from the end of its
// headers: past it the request is a 408.
const BodyTimeout = 5 * time.Second

// PublishTimeout bounds one request's publish and confirm: past it the
// request is a 503 (still waiting for the publishes before it) or a 504
// (sent, no confirm yet), never a hang.
const PublishTimeout = 5 * time.Second

// Server is the HTTP API. Every request shows up in the stream: a message
// it published as enqueued (and scheduled, for a mail that waits); a
// request it refused, or could not publish, as failed, with the status and
// the reason. Create it with New.
type Server struct {
	pub    Publisher
	stream *lab.Stream
	now    func() time.Time
	reqs   atomic.Int64
	routes map[string]http.HandlerFunc

	mu      sync.Mutex
	unknown []string // ids answered 504: sent, never confirmed
}

// New returns the API publishing with pub and reporting to stream.
func New(pub Publisher, stream *lab.Stream) *Server {
	s := &Server{pub: pub, stream: stream, now: time.Now}
	s.routes = map[string]http.HandlerFunc{UsersPath: s.createUser, SchedulePath: s.scheduleEmail}
	return s
}

// Unknown returns the ids the API answered 504 so far: each was sent and
// never confirmed, so the broker may or may not hold it. Broker.Close
// takes them, to say so of any still pending when the queues go.
func (s *Server) Unknown() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.unknown)
}

// ServeHTTP routes a request: a known path takes POST only (405 with
// Allow otherwise); any other path is a 404. Every error is JSON.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The body must arrive within BodyTimeout of the headers: a slow
	// client then gets a 408 with a JSON answer, well before the
	// server's write bound, instead of a connection cut with none.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(BodyTimeout))
	h, ok := s.routes[r.URL.Path]
	switch {
	case !ok:
		s.refuse(w, r, "", http.StatusNotFound, fmt.Errorf("no API at %s: try POST %s or POST %s", r.URL.Path, UsersPath, SchedulePath))
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		s.refuse(w, r, "", http.StatusMethodNotAllowed, fmt.Errorf("%s takes POST, not %s", r.URL.Path, r.Method))
	default:
		h(w, r)
	}
}

// createUser is seed 004's POST /api/v1/users: validate, give the user a
// UUID, publish it through raffle_exchange, answer 200 {"id": ...}.
func (s *Server) createUser(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	u, err := decodeUser(body)
	if err != nil {
		s.refuse(w, r, "", http.StatusBadRequest, err)
		return
	}
	u.ID = newUUID()
	msgBody, _ := json.Marshal(userMessage{Task: u.ID, User: u}) // four strings always marshal
	route := Route{Exchange: raffle.Exchange, Key: raffle.Queue}
	if !s.publish(w, r, u.ID, route, rabbit.Publishing(u.ID, msgBody)) {
		return
	}
	s.stream.Emit(lab.Event{Kind: lab.Enqueued, Task: u.ID, Queue: raffle.Queue, Actor: Actor,
		Note: fmt.Sprintf("200 via %s: %s, stored nowhere yet", raffle.Exchange, s.promise())})
	writeJSON(w, http.StatusOK, map[string]string{"id": u.ID})
}

// scheduleEmail is seed 001's POST /api/sequential/schedule-email, on
// the broker as lesson Q11's strategy (c): the mail goes to the level wait
// queue that fits its delay (or to mail.queue when due), its scheduledTime
// in a header for the router that takes it on from mail.router.
func (s *Server) scheduleEmail(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	m, delay, err := decodeMail(body, s.now())
	if err != nil {
		s.refuse(w, r, "", http.StatusBadRequest, err)
		return
	}
	m.Task = newUUID()
	msgBody, _ := json.Marshal(m) // four strings always marshal
	first, wait := mail.FirstHop(delay)
	if !s.publish(w, r, m.Task, Route{Key: first}, mail.Publishing(m.Task, msgBody, m.ScheduledTime)) {
		return
	}
	note := fmt.Sprintf("200, due %s: %s", m.ScheduledTime, s.promise())
	if !wait {
		note += "; already due: straight to " + mail.MailQueue
	}
	s.stream.Emit(lab.Event{Kind: lab.Enqueued, Task: m.Task, Queue: first, Actor: Actor, Note: note})
	if wait {
		s.stream.Emit(lab.Event{Kind: lab.Scheduled, Task: m.Task, To: first, Actor: Actor, DelayMs: delay.Milliseconds(),
			Note: fmt.Sprintf("then %s, where Q11's router sends it on; due time in header %s", mail.RouterQueue, mail.DueHeader)})
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": m.Task, "scheduledTime": m.ScheduledTime, "queue": first})
}

// promise says what the 200 means under the publisher's mode.
func (s *Server) promise() string {
	if s.pub.Confirms() {
		return "confirmed by the broker"
	}
	return "sent WITHOUT a confirm, the broker may not have it"
}

// readBody reads at most MaxBody bytes of a JSON body, within
// BodyTimeout of the request's start: another Content-Type is a 415 (the
// seed's API parses JSON only), a larger body a 413, a body that does not
// arrive in time a 408 (the connection is closed after it), a body cut
// short a 400. Each with a JSON answer.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		s.refuse(w, r, "", http.StatusUnsupportedMediaType, err)
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooBig *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooBig):
		s.refuse(w, r, "", http.StatusRequestEntityTooLarge, fmt.Errorf("body larger than %d bytes", MaxBody))
		return nil, false
	case errors.As(err, &netErr) && netErr.Timeout():
		w.Header().Set("Connection", "close")
		s.refuse(w, r, "", http.StatusRequestTimeout, fmt.Errorf("the body did not arrive within %v", BodyTimeout))
		return nil, false
	case err != nil:
		s.refuse(w, r, "", http.StatusBadRequest, fmt.Errorf("reading the body: %v", err))
		return nil, false
	}
	return body, true
}

// The outcomes a client reads in the "outcome" field of a failed
// publish's answer (see Server.publish).
const (
	OutcomeNotPublished = "not_published" // 503: the broker does not have it; a retry is safe
	OutcomeNotStored    = "not_stored"    // 503: the broker refused it or no queue took it; a retry is safe
	OutcomeUnknown      = "unknown"       // 504: sent, no confirm; a retry may store it twice
)

// checkContentType requires a JSON media type (a charset parameter is
// fine). curl's -d sends application/x-www-form-urlencoded unless told.
func checkContentType(ct string) error {
	const how = ` (curl: -H 'Content-Type: application/json')`
	if ct == "" {
		return errors.New("no Content-Type: send the body as application/json" + how)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("Content-Type %q: send the body as application/json%s", ct, how)
	}
	return nil
}

// publish publishes msg to route.Key's queue within PublishTimeout. It
// returns true when the API may answer 200. Otherwise it has answered
// already, by what the broker may hold:
//
//   - 503, outcome not_published or not_stored: the broker does not have
//     the message; the client may send it again.
//   - 504, outcome unknown, with the id: sent, but no confirm came (the
//     broker stopped, the connection dropped, the bound passed). The
//     broker may have stored it: a client that sends it again may create
//     it twice. The stream tracks it as enqueued, so that a message that
//     is there after all is never lost without an event saying so.
//
// A body never carries the broker's URL or user: the stream's note has
// the reason, redacted.
func (s *Server) publish(w http.ResponseWriter, r *http.Request, id string, route Route, msg amqp.Publishing) bool {
	ctx, cancel := context.WithTimeout(r.Context(), PublishTimeout)
	defer cancel()
	err := s.pub.Publish(ctx, route, msg)
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrUnknown):
		s.mu.Lock()
		s.unknown = append(s.unknown, id)
		s.mu.Unlock()
		s.stream.Emit(lab.Event{Kind: lab.Enqueued, Task: id, Queue: route.Key, Actor: Actor,
			Note: fmt.Sprintf("%s %s → 504, outcome UNKNOWN: %v", r.Method, r.URL.Path, err)})
		writeJSON(w, http.StatusGatewayTimeout, map[string]string{"outcome": OutcomeUnknown, "id": id,
			"error": "sent, but the broker did not confirm it: it may or may not be stored; " +
				"sending it again may create it twice: check for id " + id + " first"})
	case errors.Is(err, ErrNotStored):
		s.refuseOutcome(w, r, id, http.StatusServiceUnavailable, OutcomeNotStored, err,
			err.Error()+"; try again later")
	default:
		s.refuseOutcome(w, r, id, http.StatusServiceUnavailable, OutcomeNotPublished, err,
			"the broker is out of reach or busy: nothing was published; try again later")
	}
	return false
}

// refuseOutcome answers a publish that surely stored nothing with status
// and {"error": answer, "outcome": outcome}, and reports it failed with
// err, the full reason.
func (s *Server) refuseOutcome(w http.ResponseWriter, r *http.Request, task string, status int, outcome string, err error, answer string) {
	s.stream.Emit(lab.Event{Kind: lab.Failed, Task: task, Actor: Actor,
		Note: fmt.Sprintf("%s %s → %d: %v; nothing stored", r.Method, r.URL.Path, status, err)})
	writeJSON(w, status, map[string]string{"error": answer, "outcome": outcome})
}

// refuse answers status with {"error": err} and reports the request as
// failed: task is the id it would have had ("" before it got one, then
// the request's number stands in).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, task string, status int, err error) {
	n := s.reqs.Add(1)
	if task == "" {
		task = fmt.Sprintf("request-%d", n)
	}
	s.stream.Emit(lab.Event{Kind: lab.Failed, Task: task, Actor: Actor,
		Note: fmt.Sprintf("%s %s → %d: %v; nothing published", r.Method, r.URL.Path, status, err)})
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// writeJSON writes v as the JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a client that hung up gets nothing either way
}

// newUUID is a random (version 4) UUID, as the seed's API generates.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
