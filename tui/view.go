package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/queuelab/qlab/render"
)

// Box geometry: a box is boxRows lines high; arrows between boxes are
// arrowW columns wide.
const (
	boxRows = 4
	arrowW  = 3
	minBox  = 10
	maxBox  = 24
)

// slot is where one box sits on screen.
type slot struct {
	name  string // queue name, or alertNode
	title string
	row   int // which row of boxes
	x, w  int
}

// slots lays the topology out left to right in the order it was found,
// wrapping to further rows when the boxes do not fit the width.
func (sc *scene) slots(width int) []slot {
	var out []slot
	names := make([]string, len(sc.nodes))
	for i, n := range sc.nodes {
		names[i] = n.Name
	}
	shared := sharedPrefix(names)
	for _, n := range sc.nodes {
		out = append(out, slot{name: n.Name, title: strings.TrimPrefix(n.Name, shared)})
	}
	if len(sc.alerts) > 0 {
		out = append(out, slot{name: alertNode, title: "alert"})
	}
	n := len(out)
	if n == 0 {
		return nil
	}
	w := min(max((width-arrowW*(n-1))/n, minBox), maxBox)
	perRow := max(1, (width+arrowW)/(w+arrowW))
	for i := range out {
		out[i].row = i / perRow
		out[i].x = (i % perRow) * (w + arrowW)
		out[i].w = w
	}
	return out
}

// stage draws the boxes, the arrows between them and, under each row of
// boxes, the lane where tokens travel.
func (m Model) stage(width int) []string {
	sc := m.sc
	slots := sc.slots(width)
	if len(slots) == 0 {
		return []string{m.st.paint(faint, "  (waiting for the first event…)")}
	}
	where := make(map[string]int, len(slots))
	for i, s := range slots {
		where[s.name] = i
	}
	arriving := map[string]int{}
	for _, mv := range sc.movers {
		if !mv.ghost && mv.tok.inTransit(m.frame) && mv.tok.queue == mv.to {
			arriving[mv.to]++
		}
	}
	rows := slots[len(slots)-1].row + 1
	var lines []string
	for r := 0; r < rows; r++ {
		cv := make([]canvas, boxRows+1)
		for i := range cv {
			cv[i] = newCanvas(width)
		}
		for i, s := range slots {
			if s.row != r {
				continue
			}
			m.drawBox(cv, s, arriving[s.name])
			if i+1 < len(slots) && slots[i+1].row == r {
				arrow := "──▶"
				if slots[i+1].name == alertNode {
					arrow = "··▶"
				}
				cv[1].put(s.x+s.w, arrow, faint)
			}
		}
		m.drawLane(cv[boxRows], slots, where, r)
		for _, c := range cv {
			lines = append(lines, c.render(m.st))
		}
	}
	return lines
}

// drawBox draws one box: its name in the top border, the tokens in it on
// the first line, counts and wait time on the second.
func (m Model) drawBox(cv []canvas, s slot, arriving int) {
	inner := s.w - 2
	title := clip(s.title, inner-2)
	edge := faint
	cv[0].put(s.x, "╭ "+title+" "+strings.Repeat("─", max(inner-len([]rune(title))-2, 0))+"╮", edge)
	cv[1].put(s.x, "│", edge)
	cv[2].put(s.x, "│", edge)
	cv[1].put(s.x+s.w-1, "│", edge)
	cv[2].put(s.x+s.w-1, "│", edge)
	cv[3].put(s.x, "╰"+strings.Repeat("─", inner)+"╯", edge)
	cw := inner - 2
	if s.name == alertNode {
		m.drawIDs(cv[1], s.x+2, cw, m.sc.alerts, warn)
		cv[2].put(s.x+2, clip(plural(len(m.sc.alerts), "mail"), cw), faint)
		return
	}
	present := len(m.sc.members[s.name]) - arriving
	m.drawTokens(cv[1], s.x+2, cw, s.name, present)
	cv[2].put(s.x+2, clip(m.boxInfo(s.name, present, arriving), cw), faint)
}

// drawTokens writes the tokens sitting in queue q (not those still on
// their way in), as many as fit, then "+N" for the rest.
func (m Model) drawTokens(c canvas, x, cw int, q string, present int) {
	reserve := len(strconv.Itoa(present)) + 2
	used, shown := 0, 0
	for _, t := range m.sc.members[q] {
		if t.inTransit(m.frame) {
			continue
		}
		text, tn := m.tokenText(t)
		need := len([]rune(text))
		if used > 0 {
			need++
		}
		if used+need > cw-reserve && !(shown == present-1 && used+need <= cw) {
			break
		}
		if used > 0 {
			used++
		}
		c.put(x+used, text, tn)
		used += len([]rune(text))
		shown++
	}
	if rest := present - shown; rest > 0 {
		c.put(x+used+1, "+"+strconv.Itoa(rest), faint)
	}
}

// drawIDs writes the last ids of list that fit in cw columns.
func (m Model) drawIDs(c canvas, x, cw int, list []string, tn tone) {
	var parts []string
	used := 0
	for i := len(list) - 1; i >= 0; i-- {
		id := label(list[i])
		if used+len(id)+1 > cw {
			break
		}
		parts = append([]string{id}, parts...)
		used += len(id) + 1
	}
	c.put(x, strings.Join(parts, " "), tn)
}

// tokenText is how token t reads inside a box.
func (m Model) tokenText(t *token) (string, tone) {
	id := label(t.id)
	switch {
	case t.status == working:
		return "▸" + id, good
	case t.status == failing:
		return "✗" + id, bad
	case t.rejected:
		return "⊘" + id, warn
	case t.status == delayed && t.due > m.clockMs:
		return id + " " + seconds(t.due-m.clockMs), warn
	case t.status == dead:
		return id, bad
	}
	return id, plain
}

// boxInfo is a box's second line: how many tokens it holds, how many are
// on their way in and, for a wait queue, its wait time.
func (m Model) boxInfo(q string, present, arriving int) string {
	var parts []string
	switch {
	case present > 0 && m.allDead(q):
		parts = append(parts, fmt.Sprintf("%d dead", present))
	case present > 0:
		parts = append(parts, fmt.Sprintf("%d in", present))
	}
	if arriving > 0 {
		parts = append(parts, fmt.Sprintf("%d coming", arriving))
	}
	if d := m.sc.nodes[m.sc.index[q]].Delays; len(d) > 0 {
		waits := make([]string, len(d))
		for i, ms := range d {
			waits[i] = seconds(ms)
		}
		parts = append(parts, "wait "+strings.Join(waits, "/"))
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, " · ")
}

// allDead reports whether every token in queue q is dead-lettered: a DLQ.
func (m Model) allDead(q string) bool {
	for _, t := range m.sc.members[q] {
		if t.status != dead {
			return false
		}
	}
	return true
}

// drawLane draws the tokens travelling into the boxes of row r: a faint
// path from where they left to where they go, and the token on it at the
// point the animation has reached.
func (m Model) drawLane(c canvas, slots []slot, where map[string]int, r int) {
	for _, mv := range m.sc.movers {
		to, ok := where[mv.to]
		if !ok || slots[to].row != r || m.frame >= mv.start+moveFrames {
			continue
		}
		dst := slots[to]
		x0, x1 := dst.x-arrowW, dst.x+1 // from off-row: come in from the left
		if from, ok := where[mv.from]; ok && slots[from].row == r {
			src := slots[from]
			switch {
			case from < to:
				x0, x1 = src.x+src.w-2, dst.x+1
			case from > to:
				x0, x1 = src.x+1, dst.x+dst.w-2
			default: // back to the tail of the same queue
				x0, x1 = src.x+src.w-2, src.x+1
			}
		}
		lo, hi := min(x0, x1), max(x0, x1)
		for x := lo; x <= hi; x++ {
			if x >= 0 && x < len(c) && c[x].r == ' ' {
				c[x] = cell{'┈', faint}
			}
		}
		step := min(m.frame-mv.start+1, moveFrames)
		x := x0 + (x1-x0)*step/moveFrames
		text := label(mv.label)
		if mv.ghost {
			text = "@" + text
		}
		if x1 >= x0 {
			text += "→"
			x -= len([]rune(text)) - 1
		} else {
			text = "←" + text
		}
		c.put(max(x, lo), text, mv.tone)
	}
}

// header is the title line: lesson, backend, speed and run state.
func (m Model) header(width int) string {
	l := m.lesson()
	state := "▶ running"
	switch {
	case m.seeking:
		state = "… finding a broker"
	case m.paused:
		state = "❚❚ paused"
	case m.runDone:
		state = "■ finished"
	}
	speed := "speed " + speedText(m.speed)
	if m.nextSpeed != m.speed {
		speed += " (next run " + speedText(m.nextSpeed) + ")"
	}
	right := fmt.Sprintf("%s · %s · %s", m.backend, speed, state)
	left := clip(l.ID+" · "+l.Title, max(width-len([]rune(right))-2, 8))
	gap := max(width-len([]rune(left))-len([]rune(right)), 1)
	return m.st.titled(left) + strings.Repeat(" ", gap) + m.st.paint(faint, right)
}

// noticeLines wraps the lesson's "what to notice" text into at most n lines.
func noticeLines(text string, width, n int) []string {
	wrapped := strings.Split(lipgloss.NewStyle().Width(max(width, 20)).Render("Notice: "+text), "\n")
	if len(wrapped) > n {
		wrapped = wrapped[:n]
		last := strings.TrimRight(wrapped[n-1], " ")
		wrapped[n-1] = clip(last+" …", width)
	}
	for i := range wrapped {
		wrapped[i] = strings.TrimRight(wrapped[i], " ")
	}
	return wrapped
}

// fates is the line where tokens end: done, dropped and lost.
func (m Model) fates(width int) string {
	c := newCanvas(width)
	x := c.put(0, "✔ done:", good)
	x = m.tail(c, x+1, width/2-x-2, m.sc.doneIDs, len(m.sc.doneIDs), good)
	x = max(x+2, width/2)
	x = c.put(x, "✗ dropped/lost:", bad)
	m.tail(c, x+1, width-x-1, m.sc.goneIDs, len(m.sc.goneIDs), bad)
	return c.render(m.st)
}

// tail writes "(N) … X Y Z": the count and the latest ids that fit.
func (m Model) tail(c canvas, x, room int, ids []string, n int, tn tone) int {
	if n == 0 {
		return c.put(x, "—", faint)
	}
	var parts []string
	used := len(strconv.Itoa(n)) + 3
	for i := len(ids) - 1; i >= 0; i-- {
		id := label(ids[i])
		if used+len(id)+1 > room-2 {
			parts = append([]string{"…"}, parts...)
			break
		}
		parts = append([]string{id}, parts...)
		used += len(id) + 1
	}
	x = c.put(x, "("+strconv.Itoa(n)+")", faint)
	return c.put(x+1, strings.Join(parts, " "), tn)
}

// breakerLine shows the breaker light and its counts, once a lesson has
// a breaker.
func (m Model) breakerLine() string {
	b := m.sc.breaker
	glyph, tn, name := "●", good, "CLOSED"
	switch b.state {
	case "open":
		glyph, tn, name = "○", bad, "OPEN"
	case "half_open":
		glyph, tn, name = "◐", warn, "HALF-OPEN"
	case "":
		glyph, tn, name = "●", good, "CLOSED"
	}
	counts := fmt.Sprintf("  %d of %d calls failed", b.fails, b.calls)
	switch b.state {
	case "open":
		counts = fmt.Sprintf("  tripped by %d failed of %d calls", b.prevFails, b.prevCalls)
	case "half_open":
		counts = fmt.Sprintf("  trial calls: %d failed of %d", b.fails, b.calls)
	}
	line := m.st.paint(tn, "breaker "+glyph+" "+name) + counts + fmt.Sprintf(" · rejected %d", b.rejected)
	if len(b.recent) > 0 {
		line += m.st.paint(warn, " ("+strings.Join(b.recent, " ")+")")
	}
	return line
}

// statsLine is the run's tally.
func (m Model) statsLine() string {
	sc := m.sc
	return fmt.Sprintf("done %d · dead %d · dropped %d · pending %d · attempts %d · %s",
		len(sc.doneIDs), sc.dead, sc.dropped+sc.lost, sc.pending(), sc.attempts, render.Stamp(m.clockMs))
}

// label shortens a task id for a token: A, B, C stay, UUIDs get cut.
func label(id string) string {
	if r := []rune(id); len(r) > 6 {
		return string(r[:5]) + "…"
	}
	return id
}

// sharedPrefix is the dotted prefix every name starts with ("sequential."
// for Q10's queues), which box titles leave out so the part that differs
// fits; "" when there are fewer than two names or none is shared.
func sharedPrefix(names []string) string {
	if len(names) < 2 {
		return ""
	}
	p := names[0][:strings.LastIndex(names[0], ".")+1]
	for _, n := range names[1:] {
		for !strings.HasPrefix(n, p) {
			p = p[:strings.LastIndex(p[:len(p)-1], ".")+1]
		}
	}
	return p
}

// clip cuts s to n columns, marking the cut with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if n <= 0 {
		return ""
	}
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// seconds formats lesson milliseconds as a countdown: 0.6s, 10s, 1.5s.
func seconds(ms int64) string {
	if ms%1000 == 0 {
		return strconv.FormatInt(ms/1000, 10) + "s"
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + "s"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func speedText(f float64) string { return strconv.FormatFloat(f, 'g', 3, 64) + "×" }
