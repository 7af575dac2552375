package class

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testItems = []string{"Q01", "Q02", "E01"}

func TestValidateRefusesWhatATableCannotShow(t *testing.T) {
	ok := Report{Student: "ana", Item: "Q01", Status: Done}
	require.NoError(t, ok.Validate(testItems))
	for name, r := range map[string]Report{
		"empty name":         {Student: " ", Item: "Q01", Status: Done},
		"long name":          {Student: strings.Repeat("a", MaxName+1), Item: "Q01", Status: Done},
		"NUL in name":        {Student: "a\x00b", Item: "Q01", Status: Done},
		"ESC in name":        {Student: "a\x1b[31mb", Item: "Q01", Status: Done},
		"bidi override":      {Student: "a\u202eb", Item: "Q01", Status: Done},
		"unknown item":       {Student: "ana", Item: "Q99", Status: Done},
		"unknown status":     {Student: "ana", Item: "Q01", Status: "great"},
		"done with detail":   {Student: "ana", Item: "Q01", Status: Done, Detail: "x"},
		"two-line detail":    {Student: "ana", Item: "Q01", Status: Failing, Detail: "a\nb"},
		"over-long detail":   {Student: "ana", Item: "Q01", Status: Failing, Detail: strings.Repeat("x", MaxDetail+1)},
		"invalid UTF-8 name": {Student: "a\xffb", Item: "Q01", Status: Done},
	} {
		err := r.Validate(testItems)
		assert.ErrorIs(t, err, ErrBadReport, name)
	}
}

func TestFirstLineSendsNoSecretAndOneLine(t *testing.T) {
	got := FirstLine("\n  dial amqp://alice:S3cret@10.0.0.1:5672/: refused\n\tat main.go:12\n")
	assert.Equal(t, "dial amqp://…@10.0.0.1:5672/: refused", got)
	assert.NotContains(t, FirstLine("x \x1b[31mred\x1b[0m \u202e"), "\x1b")
	long := FirstLine(strings.Repeat("é", 500))
	assert.Equal(t, MaxDetail, len([]rune(long)))
	r := Report{Student: "ana", Item: "Q01", Status: Failing, Detail: FirstLine("boom\x00\nmore")}
	assert.NoError(t, r.Validate(testItems), "FirstLine's output is always a valid detail")
}

func TestBoardKeepsTheLatestVerdictAndCountsDone(t *testing.T) {
	b := NewBoard(testItems, 2)
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	changed := b.Changed()
	require.NoError(t, b.Add(Report{Student: "ana", Item: "Q01", Status: Failing, Detail: "3 of 4 checks fail"}, now))
	select {
	case <-changed:
	default:
		t.Fatal("Add did not signal a change")
	}
	require.NoError(t, b.Add(Report{Student: "ana", Item: "Q01", Status: Done}, now))
	require.NoError(t, b.Add(Report{Student: "ana", Item: "Q01", Status: Done}, now))
	require.NoError(t, b.Add(Report{Student: "ana", Item: "E01", Status: Failing, Detail: "x"}, now))
	require.NoError(t, b.Add(Report{Student: "bo", Item: "Q02", Status: Done}, now))
	p := b.Progress()
	require.Len(t, p.Students, 2)
	assert.Equal(t, "ana", p.Students[0].Name)
	assert.Equal(t, 1, p.Students[0].Done, "a repeated done counts once")
	assert.Equal(t, Failing, p.Students[0].Cells["E01"].Status)
	assert.ErrorIs(t, b.Add(Report{Student: "cy", Item: "Q01", Status: Done}, now), ErrFull)
	assert.NoError(t, b.Add(Report{Student: "bo", Item: "Q01", Status: Done}, now), "a known student still reports when full")

	text := p.Text(60, now.Add(90*time.Second))
	assert.Contains(t, text, "ana         1/3     1m  E01: x")
	for _, l := range strings.Split(text, "\n") {
		assert.LessOrEqual(t, len([]rune(l)), 60, l)
	}
}

func post(t *testing.T, url, contentType, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/api/report", contentType, strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServerAnswers400ForBadReportsAnd503WhenFull(t *testing.T) {
	srv := httptest.NewServer(NewHandler(NewBoard(testItems, 1)))
	defer srv.Close()
	const js = "application/json"
	code, _ := post(t, srv.URL, js, `{"student":"ana","item":"Q01","status":"done"}`)
	assert.Equal(t, http.StatusNoContent, code)
	for name, c := range map[string]struct{ ct, body string }{
		"text/plain":      {"text/plain", `{"student":"bo","item":"Q01","status":"done"}`},
		"not JSON":        {js, `hello`},
		"unknown field":   {js, `{"student":"bo","item":"Q01","status":"done","code":"rm -rf /"}`},
		"two objects":     {js, `{"student":"bo","item":"Q01","status":"done"}{}`},
		"too large":       {js, `{"student":"` + strings.Repeat("a", MaxBody) + `"}`},
		"control in name": {js, `{"student":"a\u001bb","item":"Q01","status":"done"}`},
	} {
		code, body := post(t, srv.URL, c.ct, c.body)
		assert.Equal(t, http.StatusBadRequest, code, name)
		assert.Contains(t, body, "bad report", name)
	}
	code, body := post(t, srv.URL, js, `{"student":"bo","item":"Q01","status":"done"}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "full")

	resp, err := http.Get(srv.URL + "/api/progress")
	require.NoError(t, err)
	defer resp.Body.Close()
	var p Progress
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	require.Len(t, p.Students, 1, "refused reports leave no trace")
	assert.Equal(t, testItems, p.Items)

	page, err := http.Get(srv.URL + "/")
	require.NoError(t, err)
	page.Body.Close()
	assert.Contains(t, page.Header.Get("Content-Security-Policy"), "default-src 'self'")
	missing, err := http.Get(srv.URL + "/etc/passwd")
	require.NoError(t, err)
	missing.Body.Close()
	assert.Equal(t, http.StatusNotFound, missing.StatusCode)
}

func TestClientJoinsProbesAndSends(t *testing.T) {
	board := NewBoard(testItems, 5)
	srv := httptest.NewServer(NewHandler(board))
	defer srv.Close()
	t.Setenv("QLAB_CONFIG_DIR", t.TempDir())

	base, err := CheckURL(srv.URL + "/")
	require.NoError(t, err)
	n, err := Probe(context.Background(), base)
	require.NoError(t, err)
	assert.Equal(t, len(testItems), n)

	m := Member{URL: base, Name: "ana"}
	require.NoError(t, m.Save())
	got, ok, err := Load()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, m, got)

	require.NoError(t, got.Send(context.Background(), "Q02", Failing, "dial amqp://u:pw@h/: refused\nstack"))
	cell := board.Progress().Students[0].Cells["Q02"]
	assert.Equal(t, "dial amqp://…@h/: refused", cell.Detail)
	err = got.Send(context.Background(), "Q77", Done, "")
	assert.ErrorContains(t, err, "refused the report")

	require.NoError(t, Forget())
	_, ok, err = Load()
	require.NoError(t, err)
	assert.False(t, ok)

	for _, bad := range []string{"ftp://h", "http://u:p@h", "nonsense", "http://h/?x=1"} {
		_, err := CheckURL(bad)
		assert.Error(t, err, bad)
	}
	_, err = Probe(context.Background(), "http://127.0.0.1:1")
	assert.ErrorContains(t, err, "no class server answered")
	notClass := httptest.NewServer(http.NotFoundHandler())
	defer notClass.Close()
	_, err = Probe(context.Background(), notClass.URL)
	assert.ErrorContains(t, err, "not as qlab class serve does")
	assert.False(t, errors.Is(err, ErrFull))
}
