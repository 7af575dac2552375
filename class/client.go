package class

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SendTimeout bounds one report: a class server that does not answer
// must never hold up a lesson or an exercise.
const SendTimeout = 2 * time.Second

// Member is a student's membership of a class: the server and the name
// the student reports under. It is remembered in ConfigPath.
type Member struct {
	URL  string `json:"url"`
	Name string `json:"name"`
}

// ConfigPath is where the membership is kept: $QLAB_CONFIG_DIR/class.json
// when that is set, else qlab/class.json in the user's config directory.
func ConfigPath() (string, error) {
	dir := os.Getenv("QLAB_CONFIG_DIR")
	if dir == "" {
		base, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("no place to remember the class: %w", err)
		}
		dir = filepath.Join(base, "qlab")
	}
	return filepath.Join(dir, "class.json"), nil
}

// Load returns the remembered membership; ok is false when there is none.
func Load() (m Member, ok bool, err error) {
	path, err := ConfigPath()
	if err != nil {
		return Member{}, false, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Member{}, false, nil
	}
	if err != nil {
		return Member{}, false, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Member{}, false, fmt.Errorf("%s is not qlab's class file (%v): qlab class leave removes it", path, err)
	}
	return m, m.URL != "" || m.Name != "", nil
}

// Save remembers m, readable only by its owner.
func (m Member) Save() error {
	path, err := ConfigPath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// Forget removes the remembered membership, if any.
func Forget() error {
	path, err := ConfigPath()
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Joined reports whether m names a server to report to.
func (m Member) Joined() bool { return m.URL != "" && m.Name != "" }

// CheckURL returns the class server's base URL from what a student typed
// ("http://10.0.0.5:8090/"): http or https, a host, no user or password
// (it would be sent with every report), no query.
func CheckURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil || u.Host == "":
		return "", fmt.Errorf("%q is not a class URL: want http://HOST:PORT, as qlab class serve prints it", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("the class URL must start with http:// or https://")
	case u.User != nil:
		return "", fmt.Errorf("the class URL must not carry a user or password")
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("the class URL takes no query or fragment")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u.String(), nil
}

// Probe checks that base answers as a class server does, within
// SendTimeout, and returns how many items it tracks.
func Probe(ctx context.Context, base string) (items int, err error) {
	ctx, cancel := context.WithTimeout(ctx, SendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/progress", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("no class server answered at %s: %w", base, unwrapURL(err))
	}
	defer resp.Body.Close()
	var p Progress
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&p) != nil || len(p.Items) == 0 {
		return 0, fmt.Errorf("%s answered, but not as qlab class serve does (HTTP %d)", base, resp.StatusCode)
	}
	return len(p.Items), nil
}

// Send reports one verdict to m's server, within SendTimeout. detail is
// passed through FirstLine, so only a failure's cleaned first line leaves
// the machine.
func (m Member) Send(ctx context.Context, item string, status Status, detail string) error {
	r := Report{Student: m.Name, Item: item, Status: status}
	if status == Failing {
		r.Detail = FirstLine(detail)
	}
	body, _ := json.Marshal(r)
	ctx, cancel := context.WithTimeout(ctx, SendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+"/api/report", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("could not report to %s: %w", m.URL, unwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("%s refused the report: %s", m.URL, FirstLine(string(msg)))
	}
	return nil
}

// unwrapURL drops url.Error's repetition of the method and URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
