package tui

import "github.com/charmbracelet/bubbles/key"

// keyMap is the lesson view's keys; help renders them from here.
type keyMap struct {
	Pause, Faster, Slower, Restart, Next, Prev, Backend, Results, Notice, Metrics, Menu, Quit key.Binding
}

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
	}
}

// ShortHelp lists the bindings shown in the one-line help.
func (k keyMap) ShortHelp() []key.Binding { return k.helpFor(running, 80) }

// helpFor lists the keys that do something in state s: pause while a run
// goes, the results once it ended. At 80 columns it leaves +/- (speed,
// shown in the header) and m (metrics) to qlab tui --help; a screen of
// 100 columns or more lists m too.
func (k keyMap) helpFor(s runState, width int) []key.Binding {
	var keys []key.Binding
	switch s {
	case finished, failed:
		keys = []key.Binding{k.Results, k.Notice, k.Restart, k.Next, k.Backend}
	case running:
		keys = []key.Binding{k.Pause, k.Notice, k.Restart, k.Next, k.Backend}
	default:
		keys = []key.Binding{k.Notice, k.Restart, k.Next, k.Backend}
	}
	if width >= 100 {
		keys = append(keys, k.Metrics)
	}
	return append(keys, k.Menu, k.Quit)
}

// FullHelp is the same keys in one column group.
func (k keyMap) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }
