package tui

import (
	"fmt"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/metrics"
	"github.com/queuelab/qlab/store"
)

// panels are the rows over the pane that count what the run's stores and
// metrics hold: the store panel, shown for a run that opens a status
// store (Q18, Q20, Q23, Q24), and the metrics panel the m key opens.
// Update takes the stores' reads (storesMsg) and the run's end
// (runDoneMsg), and returns the command that reads the stores next; the
// metrics are read in the model's Update (read), never in View. rows is how many
// lines View draws.
type panels struct {
	st  styles
	url string // where /metrics is served (Config.MetricsURL), "" for nowhere

	gen    int              // of the current run: an older run's reads are dropped
	met    *metrics.Metrics // this run's own, read for the panel (Config.Metrics spans runs)
	totals metrics.Totals   // what the metrics panel shows
	on     bool             // the metrics panel is open (m)

	stores *lesson.Stores      // this run's status stores (Options.Stores)
	states []lesson.StoreState // as last read, for the store panel
	final  bool                // states were read after the run returned
	ended  bool                // the run returned: no more periodic reads
}

// start readies the panels for run gen, and returns the run's metrics
// sink and the command of the first read of its stores.
func (p *panels) start(gen int) (lab.Sink, tea.Cmd) {
	p.gen = gen
	p.met, p.totals = metrics.New(), metrics.Totals{}
	p.stores, p.states, p.final, p.ended = &lesson.Stores{}, nil, false, false
	return p.met, storesCmd(gen, p.stores, storesEvery)
}

// Update takes a read of the run's stores, asking for the next while the
// run goes, and the run's end, when the stores are read once more, all
// closed.
func (p panels) Update(msg tea.Msg) (panels, tea.Cmd) {
	switch msg := msg.(type) {
	case storesMsg:
		if msg.gen != p.gen || p.final {
			return p, nil // another run's, or a tick read before the final one
		}
		p.states, p.final = msg.states, msg.final
		if p.ended {
			return p, nil
		}
		return p, storesCmd(p.gen, p.stores, storesEvery)
	case runDoneMsg:
		if msg.gen != p.gen {
			return p, nil
		}
		p.ended = true
		return p, finalStoresCmd(p.gen, p.stores)
	}
	return p, nil
}

// read takes the metrics panel's figures for run from this run's
// metrics, while the panel is open (a read of the registry, never in
// View).
func (p *panels) read(run metrics.Run) {
	if p.on && p.met != nil {
		p.totals = p.met.Totals(run)
	}
}

// rows is how many rows the store and metrics panels take.
func (p panels) rows() int {
	n := p.storeRows()
	if p.on {
		n += 2
	}
	return n
}

// View draws both panels at width w, rows lines ("" for none).
func (p panels) View(w int) string {
	return strings.Join(append(p.storePanel(w), p.metricsPanel(w)...), "\n")
}

// maxStoreRows is how many stores the store panel shows: the latest a
// run opened (Q18 opens one per variant, Q20 one per policy).
const maxStoreRows = 2

// storeRows is how many rows the store panel takes: none for a run that
// opened no status store.
func (p panels) storeRows() int { return min(len(p.states), maxStoreRows) }

// storePanel is the store panel: how many rows each of the latest stores
// holds in each status, and its users, as the store itself counts them.
func (p panels) storePanel(w int) []string {
	states := p.states[len(p.states)-p.storeRows():]
	lines := make([]string, len(states))
	for i, s := range states {
		name := s.Name
		if s.Closed {
			name += " ended"
		}
		line := fmt.Sprintf("store %s · %s ·", name, s.Kind)
		rows := 0
		for _, st := range store.AllStatuses { // a status no row is in is left out: 80 columns
			if n := s.Counts[st]; n > 0 {
				line += fmt.Sprintf(" %s %d", st, n)
				rows += n
			}
		}
		if s.Users > 0 {
			line += fmt.Sprintf(" users %d", s.Users)
		} else if rows == 0 {
			line += " no rows yet"
		}
		lines[i] = p.st.paint(faint, clip(line, w))
	}
	return lines
}

// metricsPanel is the metrics panel (m): this run's seed-003 figures as
// /metrics has them, counted from the stream on either backend.
func (p panels) metricsPanel(w int) []string {
	if !p.on {
		return nil
	}
	t := p.totals
	head := fmt.Sprintf("metrics · ack %g · nack %g · redelivery %g", t.Acks, t.Nacks, t.Redeliveries)
	if t.Publishes > 0 { // only a backend that times its publishes reports them
		head += fmt.Sprintf(" · publish n=%d", t.Publishes)
	}
	if p.url != "" {
		head += " · " + p.url
	}
	times := fmt.Sprintf("consume n=%d avg %s · wait n=%d avg %s",
		t.Attempts, avg(t.ConsumeSeconds, t.Attempts), t.Waits, avg(t.WaitSeconds, t.Waits))
	if t.Gauges {
		times += fmt.Sprintf(" · depth %g · consumers %g", t.Depth, t.Consumers)
	}
	return []string{p.st.paint(faint, clip(head, w)), p.st.paint(faint, clip(times, w))}
}

// avg is sum/n seconds as "0.125s", or "-" before any sample.
func avg(sum float64, n uint64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatFloat(sum/float64(n), 'f', 3, 64) + "s"
}
