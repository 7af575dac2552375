package serve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/seeds/mail"
)

// FuzzRequestBody sends any body to both endpoints. Whatever it is, the
// answer is a 200 or a 400 (413 past the limit) with a JSON object, and a
// message is published exactly when the answer is 200 — and then it is a
// valid user or mail carrying the id the client was given.
func FuzzRequestBody(f *testing.F) {
	for _, seed := range []string{
		`{"name":"John Silva","email":"john@email.com"}`,
		`{"to":"recipient@example.com","subject":"Hello","scheduledTime":"2026-02-08T11:39:51Z"}`,
		`{"name":"A","email":"A <a@example.com>"}`,
		`{"name":"\ud800","email":"a@example.com"}`,
		`{"to":"r@example.com","subject":"s","scheduledTime":"2026-02-08T11:39:51"}`,
		`null`, `{}`, `[]`, `{"name":"A","email":"a@example.com"} {}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{UsersPath, SchedulePath} {
			pub := &recordingPublisher{}
			s := newTestServer(pub, &lab.Recorder{})
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			s.ServeHTTP(w, r)
			var got map[string]string
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("%s: answer is not a JSON object: %q", path, w.Body.String())
			}
			msgs := pub.all()
			switch w.Code {
			case http.StatusOK:
				if len(msgs) != 1 {
					t.Fatalf("%s: 200 with %d messages published", path, len(msgs))
				}
				checkPublished(t, path, got["id"], msgs[0].msg.Body)
			case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
				if got["error"] == "" || len(msgs) != 0 {
					t.Fatalf("%s: %d with error %q and %d messages published", path, w.Code, got["error"], len(msgs))
				}
			default:
				t.Fatalf("%s: status %d for body %q", path, w.Code, body)
			}
		}
	})
}

// checkPublished fails t unless body is a valid message for path with id.
func checkPublished(t *testing.T, path, id string, body []byte) {
	t.Helper()
	if path == UsersPath {
		var u User
		if err := json.Unmarshal(body, &u); err != nil || u.ID != id {
			t.Fatalf("published user %q does not carry id %q", body, id)
		}
		u.ID = ""
		again, _ := json.Marshal(u)
		if _, err := decodeUser(again); err != nil {
			t.Fatalf("published an invalid user %q: %v", body, err)
		}
		return
	}
	var m mail.Mail
	if err := json.Unmarshal(body, &m); err != nil || m.Task != id {
		t.Fatalf("published mail %q does not carry id %q", body, id)
	}
	m.Task = ""
	again, _ := json.Marshal(m)
	if _, _, err := decodeMail(again, testNow); err != nil {
		t.Fatalf("published an invalid mail %q: %v", body, err)
	}
}
