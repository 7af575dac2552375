package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
)

// keyMap is the lesson view's keys; help renders them from here.
type keyMap struct {
	Pause, Faster, Slower, Restart, Next, Prev, Backend, Results, Notice, Metrics, Menu, Quit key.Binding
	// Cut and Hold are the fault keys of a broker run: cut its own
	// connections, close a channel while its worker holds a delivery.
	Cut, Hold key.Binding
}

// The fault keys (keyMap.Cut, keyMap.Hold).
const (
	cutKey  = "x"
	holdKey = "c"
)

func newKeyMap() keyMap {
	return keyMap{
		Pause:   key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "pause")),
		Faster:  key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+/-", "speed")),
		Slower:  key.NewBinding(key.WithKeys("-", "_")),
		Restart: key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "restart")),
		Next:    key.NewBinding(key.WithKeys("n"), key.WithHelp("n/p", "lesson")),
		Prev:    key.NewBinding(key.WithKeys("p")),
		Backend: key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "backend")),
		Results: key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "results")),
		Notice:  key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "notice")),
		Metrics: key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "metrics")),
		Menu:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "menu")),
		Quit:    key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Cut:     key.NewBinding(key.WithKeys(cutKey), key.WithHelp(cutKey, "cut conns")),
		Hold:    key.NewBinding(key.WithKeys(holdKey), key.WithHelp(holdKey, "close chan")),
	}
}

// ShortHelp lists the bindings shown in the one-line help.
func (k keyMap) ShortHelp() []key.Binding { return k.helpFor(running, 80, nil) }

// actionKeys are the bindings of a lesson's own keys (Lesson.Actions).
func actionKeys(actions []lesson.Action) []key.Binding {
	var keys []key.Binding
	for _, a := range actions {
		keys = append(keys, key.NewBinding(key.WithKeys(a.Key), key.WithHelp(a.Key, a.Help)))
	}
	return keys
}

// helpFor lists the keys that do something in state s: pause and the
// lesson's own keys (acts) while a run goes, the results once it ended.
// At 80 columns it leaves +/- (speed, shown in the header) and m
// (metrics) to qlab tui --help; a screen of 100 columns or more lists m
// too. What does not fit width goes, least needed first: m, b, n/p, esc,
// then i and r (a lesson's own keys and a broker run's fault keys at 80
// columns leave room for none of the first four; Q21's k and v with the
// fault keys, for none of them).
func (k keyMap) helpFor(s runState, width int, acts []key.Binding) []key.Binding {
	var keys []key.Binding
	switch s {
	case finished, failed:
		keys = []key.Binding{k.Results, k.Notice, k.Restart, k.Next, k.Backend}
	case running:
		keys = append(append([]key.Binding{k.Pause}, acts...), k.Notice, k.Restart, k.Next, k.Backend)
	default:
		keys = []key.Binding{k.Notice, k.Restart, k.Next, k.Backend}
	}
	if width >= 100 {
		keys = append(keys, k.Metrics)
	}
	keys = append(keys, k.Menu, k.Quit)
	for _, drop := range []key.Binding{k.Metrics, k.Backend, k.Next, k.Menu, k.Notice, k.Restart} {
		if helpWidth(keys) <= width {
			break
		}
		keys = without(keys, drop)
	}
	return keys
}

// helpSep is what the help model puts between two keys (help.New's
// ShortSeparator).
const helpSep = " • "

// helpWidth is how many columns the help line of keys takes.
func helpWidth(keys []key.Binding) int {
	w := 0
	for i, b := range keys {
		if i > 0 {
			w += len([]rune(helpSep))
		}
		w += len([]rune(b.Help().Key)) + 1 + len([]rune(b.Help().Desc))
	}
	return w
}

// without is keys less the one that shows drop's help.
func without(keys []key.Binding, drop key.Binding) []key.Binding {
	var out []key.Binding
	for _, b := range keys {
		if b.Help() != drop.Help() {
			out = append(out, b)
		}
	}
	return out
}

// FullHelp is the same keys in one column group.
func (k keyMap) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// extra are the keys the help line lists besides the view's own: a
// lesson's (actions), then, for a run on backend b that is a broker's,
// the fault keys the lesson's keys leave free.
func (k keyMap) extra(actions []lesson.Action, b lab.Backend) []key.Binding {
	acts := actionKeys(actions)
	if b != lab.Rabbit {
		return acts
	}
	for _, f := range []key.Binding{k.Cut, k.Hold} {
		if !key.Matches(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(f.Keys()[0])}, acts...) {
			acts = append(acts, f)
		}
	}
	return acts
}
