package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// Box geometry: a box is boxRows lines high (its name in the top border,
// its tokens, its counts and wait in the bottom border); arrows between
// boxes are arrowW columns wide. Boxes sit in a grid whose columns depend
// only on the terminal's width, so a box found late never resizes the
// others.
const (
	boxRows = 3
	arrowW  = 3
	minBox  = 24 // a 20-column title: every queue name of the lab, abbreviated at worst
	maxCols = 6
)

// slot is where one box sits on screen.
type slot struct {
	name  string // queue name, or a pseudo-box (alertNode, timerNode)
	title string
	row   int // which row of boxes
	x, w  int
}

// grid returns how many boxes fit a row of width and how wide each is.
func grid(width int) (cols, w int) {
	cols = min(max((width+arrowW)/(minBox+arrowW), 1), maxCols)
	return cols, max((width-arrowW*(cols-1))/cols, 8)
}

// slots lays the topology out left to right in the order it was found,
// wrapping to further rows when the boxes do not fit the width.
func (sc *scene) slots(width int) []slot {
	var names []string
	for _, n := range sc.nodes {
		if n.Name != timerNode {
			names = append(names, n.Name)
		}
	}
	shared := sharedPrefix(names)
	cols, w := grid(width)
	out := make([]slot, 0, len(sc.nodes)+1)
	for _, n := range sc.nodes {
		title := timerTitle
		if n.Name != timerNode {
			title = abbreviate(strings.TrimPrefix(n.Name, shared), w-4)
		}
		out = append(out, slot{name: n.Name, title: title})
	}
	if len(sc.alerts) > 0 {
		out = append(out, slot{name: alertNode, title: "alert"})
	}
	for i := range out {
		out[i].row = i / cols
		out[i].x = (i % cols) * (w + arrowW)
		out[i].w = w
	}
	return out
}

// timerTitle names the box of in-memory timers: a task waiting there is in
// no queue, only in a time.AfterFunc of the process.
const timerTitle = "timers (memory)"

// stage is the scene component: the boxes of the lesson's queues with
// the tokens in them and travelling between them, the fates line and the
// breaker light (View), and the tally with the lesson clock (statsLine,
// which stays when the pane takes the stage's rows), all drawn from the
// scene the run's events build. Update takes a batch of events (the
// model routes eventsMsg here unless the user paused): a frame tick
// moves the lesson clock and the animation on. pump says what reads the
// run's channel next, so exactly one read is outstanding (pumping). View
// and statsLine are pure functions of the stage.
type stage struct {
	st      styles
	sc      *scene
	frame   int       // animation frames so far
	clock   int64     // lesson time the view shows, in ms
	lastAt  time.Time // when the previous frame ticked; zero while idle
	pumping bool      // a wait or frame command of this run is outstanding
	closed  bool      // the run's channel is drained
}

func newStage(explicit []Node, st styles) stage {
	return stage{st: st, sc: newScene(explicit)}
}

// Update applies a batch of events. A frame tick moves the clock by the
// real time since the last one at speed (lesson time per real time).
func (v stage) Update(msg eventsMsg, speed float64) stage {
	if msg.frame {
		v.frame++
		if !v.lastAt.IsZero() {
			v.clock += int64(float64(msg.at.Sub(v.lastAt).Milliseconds()) * speed)
		}
		v.lastAt = msg.at
	}
	v.apply(msg.events)
	v.sc.advance(v.clock, v.frame)
	return v
}

// apply folds events into the scene and the clock.
func (v *stage) apply(evs []lab.Event) {
	for _, e := range evs {
		v.sc.apply(e, v.frame)
		v.clock = max(v.clock, e.TMs)
	}
}

// pump returns the command that next reads run r's channel, or nil:
// a frame tick while anything moves, a blocking wait when all is still,
// nothing while paused or after the end. fresh says events just came.
func (v *stage) pump(r session, fresh bool) tea.Cmd {
	if v.pumping || r.paused || r.h == nil {
		return nil
	}
	moving := v.sc.prune(v.frame)
	var cmd tea.Cmd
	switch {
	case moving || (fresh && !v.closed):
		cmd = frameCmd(r.h, frameEvery) // coalesce what comes next on the frame clock
	case v.sc.counting(v.clock):
		cmd = frameCmd(r.h, countEvery)
	case v.closed:
		return nil
	default:
		v.lastAt = time.Time{} // idle: no ticks; the next event sets the clock
		cmd = waitCmd(r.h)
	}
	v.pumping = true
	return cmd
}

// View draws the stage at width: the part's title, if the lesson has
// parts; the boxes, the arrows between them and, under each row of
// boxes, the lane where tokens travel (idle, before the first box); the
// fates line; the breaker light, once a breaker reported.
func (v stage) View(width int, idle string) string {
	lines := v.boxes(width, idle)
	lines = append(lines, v.fates(width))
	if v.sc.breaker.seen {
		lines = append(lines, clip(v.breakerLine(), width))
	}
	return strings.Join(lines, "\n")
}

// height is how many lines View draws.
func (v stage) height(width int, idle string) int {
	n := 1 + strings.Count(idle, "\n") // no boxes: the idle text
	if s := v.sc.slots(width); len(s) > 0 {
		n = (s[len(s)-1].row + 1) * (boxRows + 1)
	}
	if v.sc.phases > 0 {
		n++
	}
	if v.sc.breaker.seen {
		n++
	}
	return n + 1 // the fates
}

// boxes draws the part's title and the boxes with their lanes, or idle.
func (v stage) boxes(width int, idle string) []string {
	sc := v.sc
	var lines []string
	if sc.phases > 0 {
		lines = append(lines, v.st.paint(warn, clip(fmt.Sprintf("━━ part %d: %s ━━", sc.phases, sc.phase), width)))
	}
	slots := sc.slots(width)
	if len(slots) == 0 {
		return append(lines, idle)
	}
	where := make(map[string]int, len(slots))
	for i, s := range slots {
		where[s.name] = i
	}
	arriving := map[string]int{}
	for _, mv := range sc.movers {
		if !mv.ghost && !mv.trail && mv.live(v.frame) && mv.tok.queue == mv.to {
			arriving[mv.to]++
		}
	}
	rows := slots[len(slots)-1].row + 1
	for r := 0; r < rows; r++ {
		cv := make([]canvas, boxRows+1)
		for i := range cv {
			cv[i] = newCanvas(width)
		}
		for i, s := range slots {
			if s.row != r {
				continue
			}
			v.drawBox(cv, s, arriving[s.name])
			if i+1 < len(slots) && slots[i+1].row == r {
				arrow := "──▶"
				if slots[i+1].name == alertNode {
					arrow = "··▶"
				}
				cv[1].put(s.x+s.w, arrow, faint)
			}
		}
		v.drawLane(cv[boxRows], slots, where, r)
		for _, c := range cv {
			lines = append(lines, c.render(v.st))
		}
	}
	return lines
}

// drawBox draws one box: its name in the top border, the tokens in it on
// the middle line, counts and wait time in the bottom border.
func (v stage) drawBox(cv []canvas, s slot, arriving int) {
	inner := s.w - 2
	var info string
	cw := inner - 2
	if s.name == alertNode {
		info = render.Count(len(v.sc.alerts), "mail")
	} else {
		info = v.boxInfo(s.name, len(v.sc.members[s.name])-arriving, arriving, inner-3)
	}
	cv[0].put(s.x, border("╭", s.title, inner, "╮"), faint)
	cv[1].put(s.x, "│", faint)
	cv[1].put(s.x+s.w-1, "│", faint)
	cv[2].put(s.x, border("╰", info, inner, "╯"), faint)
	if s.name == alertNode {
		v.drawIDs(cv[1], s.x+2, cw, v.sc.alerts, warn)
		return
	}
	v.drawTokens(cv[1], s.x+2, cw, s.name, len(v.sc.members[s.name])-arriving)
}

// border is a box's top or bottom edge with text set into it.
func border(left, text string, inner int, right string) string {
	text = clip(text, inner-2)
	if text == "" {
		return left + strings.Repeat("─", inner) + right
	}
	return left + " " + text + " " + strings.Repeat("─", max(inner-len([]rune(text))-2, 0)) + right
}

// abbreviate fits a queue name into n columns: whole if it fits, else
// with its leading dotted parts cut to their first letter
// (second.retry.processing → s.retry.processing → s.r.processing), and
// only then clipped.
func abbreviate(name string, n int) string {
	parts := strings.Split(name, ".")
	for i := 0; i < len(parts)-1 && len([]rune(strings.Join(parts, "."))) > n; i++ {
		parts[i] = string([]rune(parts[i])[:1])
	}
	return clip(strings.Join(parts, "."), n)
}

// drawTokens writes the tokens sitting in queue q (not those still on
// their way in), as many as fit, then "+N" for the rest.
func (v stage) drawTokens(c canvas, x, cw int, q string, present int) {
	reserve := len(strconv.Itoa(present)) + 2
	used, shown := 0, 0
	for _, t := range v.sc.members[q] {
		if t.inTransit(v.frame) {
			continue
		}
		text, tn := v.tokenText(t)
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
func (v stage) drawIDs(c canvas, x, cw int, list []string, tn tone) {
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

// tokenText is how token t reads inside a box (see legend).
func (v stage) tokenText(t *token) (string, tone) {
	id := label(t.id)
	switch {
	case t.status == working:
		return "▸" + id, good
	case t.status == failing:
		return "✗" + id, bad
	case t.rejected:
		return "⊘" + id, warn
	case t.status == delayed && t.due > v.clock:
		return id + " " + seconds(t.due-v.clock), warn
	case t.status == received:
		return "✉" + id, bad
	case t.status == dead, t.status == stranded:
		return id, bad
	}
	return id, plain
}

// legend explains the marks tokenText uses.
const legend = "▸ working · ✗ failed · ⊘ rejected · C 0.6s due in · ✉ read off the DLQ"

// boxInfo is a box's bottom line in at most n columns: how many tokens it
// holds, how many are on their way in and what its tasks wait there (a
// wait queue's TTL, the timers' delays). The wait is the box's identity,
// so the counts give way first.
func (v stage) boxInfo(q string, present, arriving, n int) string {
	var counts []string
	switch {
	case present > 0 && v.allDead(q):
		counts = append(counts, fmt.Sprintf("%d dead", present))
	case present > 0:
		counts = append(counts, fmt.Sprintf("%d in", present))
	}
	if arriving > 0 {
		counts = append(counts, fmt.Sprintf("%d coming", arriving))
	}
	wait := ""
	if d := v.sc.nodes[v.sc.index[q]].Delays; len(d) > 0 {
		waits := make([]string, 0, 3)
		for i, ms := range d {
			if i == 3 {
				waits = append(waits, "…")
				break
			}
			waits = append(waits, seconds(ms))
		}
		wait = "wait " + strings.Join(waits, "/")
		if q != timerNode {
			wait = "ttl " + strings.Join(waits, "/")
		}
	}
	for len(counts) > 0 {
		line := strings.Join(append(slices.Clone(counts), wait), " · ")
		if wait == "" {
			line = strings.Join(counts, " · ")
		}
		if len([]rune(line)) <= n {
			return line
		}
		counts = counts[:len(counts)-1]
	}
	return wait
}

// allDead reports whether every token in queue q is dead-lettered: a DLQ.
func (v stage) allDead(q string) bool {
	for _, t := range v.sc.members[q] {
		if t.status != dead && t.status != received {
			return false
		}
	}
	return true
}

// drawLane draws the tokens travelling into the boxes of row r: a faint
// path from where they left to where they go, and the token on it at the
// point the animation has reached. Tokens never overwrite each other: one
// that would is set beside the others, or counted in a "+N" at the end.
func (v stage) drawLane(c canvas, slots []slot, where map[string]int, r int) {
	taken := make([]bool, len(c))
	hidden := 0
	for _, mv := range v.sc.movers {
		to, ok := where[mv.to]
		if !ok || slots[to].row != r || !mv.live(v.frame) {
			continue
		}
		x0, x1 := lanePath(slots, where, mv.from, to, r, mv.head)
		lo, hi := min(x0, x1), max(x0, x1)
		for x := max(lo, 0); x <= hi && x < len(c); x++ {
			if c[x].r == ' ' {
				c[x] = cell{'┈', faint}
			}
		}
		if mv.trail {
			if x1 >= 0 && x1 < len(c) && !taken[x1] {
				c[x1] = cell{map[bool]rune{true: '▸', false: '◂'}[x1 >= x0], faint}
			}
			continue
		}
		step := min(v.frame-mv.start+1, moveFrames)
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
		roomLo, roomHi := laneRoom(slots, where, mv.from, to, r)
		at, ok := freeSpan(taken, max(x, lo), len([]rune(text)), roomLo, roomHi)
		if !ok {
			hidden++
			continue
		}
		c.put(at, text, mv.tone)
		for i := at; i < at+len([]rune(text)) && i < len(taken); i++ {
			taken[i] = true
		}
	}
	if hidden > 0 {
		more := "+" + strconv.Itoa(hidden)
		if at, ok := freeSpan(taken, len(c)-len(more), len(more), 0, len(c)-1); ok {
			c.put(at, more, faint)
		}
	}
}

// lanePath is where on row r's lane a token going from queue from to box
// to travels: from the source box's edge to the destination's, or along
// under the destination when it comes from another row. Back into the
// same box it runs under the whole box to the tail, or, when head is set,
// hops a quarter of the way back to the head (the box's left end).
func lanePath(slots []slot, where map[string]int, from string, to, r int, head bool) (x0, x1 int) {
	dst := slots[to]
	x0, x1 = dst.x+dst.w-2, dst.x+1 // from another row: it slides in under the box
	if f, ok := where[from]; ok && slots[f].row == r {
		src := slots[f]
		switch {
		case f < to:
			x0, x1 = src.x+src.w-2, dst.x+1
		case f > to:
			x0, x1 = src.x+1, dst.x+dst.w-2
		case head: // back to the head of the same queue
			x0, x1 = src.x+max(src.w/4, 2), src.x+1
		default: // back to the tail of the same queue
			x0, x1 = src.x+src.w-2, src.x+1
		}
	}
	return x0, x1
}

// laneRoom is the stretch of row r's lane a token going from queue from to
// box to may be set in when its own spot is taken: under both boxes and
// between them.
func laneRoom(slots []slot, where map[string]int, from string, to, r int) (lo, hi int) {
	dst := slots[to]
	lo, hi = dst.x, dst.x+dst.w-1
	if f, ok := where[from]; ok && slots[f].row == r {
		lo, hi = min(lo, slots[f].x), max(hi, slots[f].x+slots[f].w-1)
	}
	return lo, hi
}

// freeSpan finds n free columns nearest to x within columns lo..hi (one
// blank column either side of other tokens), searching outwards.
func freeSpan(taken []bool, x, n, lo, hi int) (int, bool) {
	lo, hi = max(lo, 0), min(hi, len(taken)-1)
	free := func(at int) bool {
		if at < lo || at+n-1 > hi {
			return false
		}
		for i := max(at-1, 0); i < min(at+n+1, len(taken)); i++ {
			if taken[i] {
				return false
			}
		}
		return true
	}
	for d := 0; d <= hi-lo; d++ {
		if free(x - d) {
			return x - d, true
		}
		if free(x + d) {
			return x + d, true
		}
	}
	return 0, false
}

// noticeLines wraps the lesson's "what to notice" text into at most n lines.
func noticeLines(text string, width, n int) []string {
	wrapped := strings.Split(lipgloss.NewStyle().Width(max(width, 20)).Render("Notice: "+text), "\n")
	if len(wrapped) > n {
		wrapped = wrapped[:n]
		more := " … (i: read all)"
		last := strings.TrimRight(wrapped[n-1], " ")
		wrapped[n-1] = strings.TrimRight(ansi.Truncate(last, width-ansi.StringWidth(more), ""), " ") + more
	}
	for i := range wrapped {
		wrapped[i] = strings.TrimRight(wrapped[i], " ")
	}
	return wrapped
}

// fates is the line where tokens end: done, dropped and lost.
func (v stage) fates(width int) string {
	c := newCanvas(width)
	x := c.put(0, "✔ done:", good)
	x = v.tail(c, x+1, width/2-x-2, v.sc.doneIDs.ids, v.sc.count[lab.FateDone], good)
	x = max(x+2, width/2)
	x = c.put(x, "✗ dropped/lost:", bad)
	v.tail(c, x+1, width-x-1, v.sc.goneIDs.ids, v.sc.count[lab.FateDropped]+v.sc.count[lab.FateLost], bad)
	return c.render(v.st)
}

// tail writes "(N) … X Y Z": the count and the latest ids that fit.
func (v stage) tail(c canvas, x, room int, ids []string, n int, tn tone) int {
	if n == 0 {
		return c.put(x, "—", faint)
	}
	var parts []string
	used := len(strconv.Itoa(n)) + 3
	for i := len(ids) - 1; i >= 0; i-- {
		id := label(ids[i])
		if used+len(id)+1 > room-2 {
			break
		}
		parts = append([]string{id}, parts...)
		used += len(id) + 1
	}
	if len(parts) < n {
		parts = append([]string{"…"}, parts...) // older ones left out
	}
	x = c.put(x, "("+strconv.Itoa(n)+")", faint)
	return c.put(x+1, strings.Join(parts, " "), tn)
}

// breakerLine shows the breaker light and its counts, once a lesson has
// a breaker.
func (v stage) breakerLine() string {
	b := v.sc.breaker
	glyph, tn := "●", good // closed, and before the breaker first reports
	switch b.state {
	case "open":
		glyph, tn = "○", bad
	case "half_open":
		glyph, tn = "◐", warn
	}
	name := cmp.Or(b.state, "closed") // the state's word as the log says it
	counts := fmt.Sprintf("  %d of %d calls failed", b.fails, b.calls)
	switch b.state {
	case "open":
		counts = fmt.Sprintf("  tripped by %d failed of %d calls", b.prevFails, b.prevCalls)
	case "half_open":
		counts = fmt.Sprintf("  trial calls: %d failed of %d", b.fails, b.calls)
	}
	line := v.st.paint(tn, "breaker "+glyph+" "+name) + counts + fmt.Sprintf(" · rejected %d", b.rejected)
	if ids := b.recent.ids; len(ids) > 0 {
		line += v.st.paint(warn, " (latest "+strings.Join(ids, " ")+")")
	}
	return line
}

// statsLine is the run's tally at width w, one count per fate as the
// closing summary counts them; the rarer fates and counts show once they
// happen. Where the whole tally is wider than w, the fates that are still
// zero (done aside) go, so the clock stays on screen.
func (v stage) statsLine(w int) string {
	c := v.sc.count
	rare := nonZero(count{"stranded", c[lab.FateStranded]}, count{"refused", c[lab.FateRefused]})
	tail := rare + fmt.Sprintf(" · attempts %d · %s", v.sc.attempts, render.Stamp(v.clock))
	line := fmt.Sprintf("done %d · dead %d · dropped %d · lost %d · pending %d",
		c[lab.FateDone], c[lab.FateDead], c[lab.FateDropped], c[lab.FateLost], c[lab.FatePending]) + tail
	if render.Width(line) > w {
		line = fmt.Sprintf("done %d", c[lab.FateDone]) + nonZero(count{"dead", c[lab.FateDead]},
			count{"dropped", c[lab.FateDropped]}, count{"lost", c[lab.FateLost]}, count{"pending", c[lab.FatePending]}) + tail
	}
	// Counts that are no fate come last: a narrow screen cuts them first.
	return clip(line+nonZero(count{"mails sent", v.sc.mails}, count{"channels closed", v.sc.closes}), w)
}

// count is one named number of the stats line.
type count struct {
	name string
	n    int
}

// nonZero is " · name n" for each count that is not zero.
func nonZero(counts ...count) string {
	var b strings.Builder
	for _, c := range counts {
		if c.n > 0 {
			fmt.Fprintf(&b, " · %s %d", c.name, c.n)
		}
	}
	return b.String()
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

// clip cuts s to n columns (ANSI codes take none, an emoji two), marking
// the cut with an ellipsis.
func clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= n {
		return s
	}
	return ansi.Truncate(s, n, "…")
}

// clipWords is s cut to n columns at a space, marked "…": a passing
// message in the status line never ends inside a word (the log keeps it
// whole).
func clipWords(s string, n int) string {
	if ansi.StringWidth(s) <= n {
		return s
	}
	head := ansi.Truncate(s, n-1, "")
	if i := strings.LastIndex(head, " "); i > n/2 {
		head = head[:i]
	}
	return strings.TrimRight(head, " ,;:·") + "…"
}

// seconds formats lesson milliseconds as a countdown: 0.6s, 10s, 1.5s.
func seconds(ms int64) string {
	if ms%1000 == 0 {
		return strconv.FormatInt(ms/1000, 10) + "s"
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + "s"
}

func speedText(f float64) string { return strconv.FormatFloat(f, 'g', 3, 64) + "×" }
