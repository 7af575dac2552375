package rabbit

import (
	"encoding/json"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// FuzzTaskProblem: any message id, content type and body either pass as
// a task whose body names the message id, or get a one-line reason; never
// a panic.
func FuzzTaskProblem(f *testing.F) {
	f.Add("A", "application/json", []byte(`{"task":"A"}`))
	f.Add("", "application/json", []byte(`{"task":""}`))
	f.Add("A", "text/plain", []byte(`{"task":"A"}`))
	f.Add("A", "application/json", []byte(`not json`))
	f.Add("A", "application/json", []byte(`{"task":"B"}`))
	f.Add("A", "application/json", []byte(`{"task":7}`))
	f.Add("A", "application/json", []byte(`["A"]`))
	f.Add("A", "application/json", []byte(`null`))
	f.Add("m-1", "application/json", []byte(`{"task":"m-1","to":"a@b","scheduledTime":"2026-02-08T11:39:51Z"}`))
	f.Fuzz(func(t *testing.T, id, contentType string, body []byte) {
		problem := TaskProblem(amqp.Delivery{MessageId: id, ContentType: contentType, Body: body})
		if problem != "" {
			if strings.Contains(problem, "\n") {
				t.Fatalf("reason is not one line: %q", problem)
			}
			return
		}
		var tb TaskBody
		if id == "" || contentType != "application/json" || len(body) > MaxTaskBody ||
			json.Unmarshal(body, &tb) != nil || tb.Task != id {
			t.Fatalf("accepted message id %q, type %q, body %q", id, contentType, body)
		}
	})
}

// TestTaskProblemRefusesAHugeBody: 10 MB is refused by its size, before
// anything parses it.
func TestTaskProblemRefusesAHugeBody(t *testing.T) {
	body := []byte(`{"task":"A","pad":"` + strings.Repeat("x", 10<<20) + `"}`)
	problem := TaskProblem(amqp.Delivery{MessageId: "A", ContentType: "application/json", Body: body})
	if !strings.Contains(problem, "more than the 65536 a task carries") {
		t.Fatalf("got %q", problem)
	}
}
