package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/list"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/queuelab/qlab/lesson"
)

// menu is the lesson menu: a bubbles list of the lessons that filters
// (/). Update takes its keys and the filter's messages; Esc clears a
// filter, and Esc on the whole list only says that q quits, since Esc in
// a lesson comes back here and a second Esc would end the program. The
// model takes the keys that leave the menu (enter, q) before Update:
// picked says which lesson enter opens. View draws the list.
type menu struct {
	list list.Model
}

// lessonItem adapts a lesson to the menu list.
type lessonItem struct{ l lesson.Lesson }

func (i lessonItem) Title() string { return fmt.Sprintf("%d · %s", i.l.Number(), i.l.Title) }
func (i lessonItem) Description() string {
	var b []string
	for _, be := range i.l.Backends() {
		b = append(b, string(be))
	}
	return strings.Join(b, ", ") + " — " + i.l.Notice
}
func (i lessonItem) FilterValue() string { return i.l.ID + " " + i.l.Title }

func newMenu(ls []lesson.Lesson) menu {
	items := make([]list.Item, len(ls))
	for i, l := range ls {
		items[i] = lessonItem{l}
	}
	l := list.New(items, list.NewDefaultDelegate(), 80, 20)
	l.Title = "QueueLab — pick a lesson (enter runs it, / filters, q quits)"
	l.KeyMap.Quit.SetKeys("q") // not esc: esc clears a filter, and comes back here from a lesson
	return menu{list: l}
}

// Update moves the cursor, filters, and answers Esc on the whole list.
func (m menu) Update(msg tea.Msg) (menu, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok && k.String() == "esc" && m.list.FilterState() == list.Unfiltered {
		return m, m.list.NewStatusMessage("esc comes back here from a lesson · q quits")
	}
	// bubbles' list filters in a command per keystroke and applies each
	// result when it comes, in whatever order: typed fast on a busy
	// machine, the matches for "bre" can land after those for "breaker".
	// So the filter enter accepts is matched here, at once, and results
	// still on their way for the keystrokes before it are dropped.
	if _, late := msg.(list.FilterMatchesMsg); late && m.list.FilterState() == list.FilterApplied {
		return m, nil
	}
	was := m.list.FilterState()
	var cmd tea.Cmd
	m.list, cmd = m.list.Update(msg)
	if was == list.Filtering && m.list.FilterState() == list.FilterApplied {
		m.list.SetFilterText(m.list.FilterValue())
	}
	return m, cmd
}

// View draws the list.
func (m menu) View() string { return m.list.View() }

// filtering reports whether the user is typing a filter: q and enter are
// letters of it then.
func (m menu) filtering() bool { return m.list.FilterState() == list.Filtering }

// picked is the lesson under the cursor, if any.
func (m menu) picked() (lesson.Lesson, bool) {
	it, ok := m.list.SelectedItem().(lessonItem)
	return it.l, ok
}

// show puts the cursor on lesson l, the cur-th of the menu; a filter that
// hides it is cleared.
func (m *menu) show(l lesson.Lesson, cur int) {
	for i, it := range m.list.VisibleItems() {
		if li, ok := it.(lessonItem); ok && li.l.ID == l.ID {
			m.list.Select(i)
			return
		}
	}
	m.list.ResetFilter()
	m.list.Select(cur)
}
