package tui

import "github.com/charmbracelet/bubbles/key"

// keyMap is the lesson view's keys; help renders them from here.
type keyMap struct {
	Pause, Faster, Slower, Restart, Next, Prev, Backend, Menu, Quit key.Binding
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
		Menu:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "menu")),
		Quit:    key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
}

// ShortHelp lists the bindings shown in the one-line help.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Pause, k.Faster, k.Restart, k.Next, k.Backend, k.Menu, k.Quit}
}

// FullHelp is the same keys in one column group.
func (k keyMap) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }
