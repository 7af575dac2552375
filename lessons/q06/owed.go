package q06

import (
	"fmt"
	"strings"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// owedTable sets the emails each strategy owed (one per task: expected)
// against those its mail server sent (actual), with the fates the ledger
// derived from the run's events.
func owedTable(phases []*phase, records []lab.TaskRecord) render.Table {
	fate := map[string]lab.Fate{}
	for _, r := range records {
		fate[r.ID] = r.Fate
	}
	t := render.Table{
		Title:  "Emails owed vs emails sent (expected vs actual)",
		Header: []string{"#", "strategy", "owed", "sent", "sent twice or more", "never sent", "verdict"},
		Notes: []string{
			"owed: one email per task; sent: what the mail server sent. A task never sent but marked done is a silent loss; one in the DLQ is still owed, and visible.",
			"A failure between sending and writing down that you did either repeats the email (send first) or, unless the write is undone, loses it (write first): " +
				"a key the mail server itself keeps is safe both ways, even when the process dies between the two steps.",
			"Part 3: the conditional update that sank #3 is safe once it is undone when the send fails, as claim-first releases its claim; the statement was never the problem. " +
				"Both lose the email if the process dies between the write and the send (no one is left to undo it), so real claims carry a lease that expires.",
		},
	}
	for i, p := range phases {
		sent, twice, never := 0, []string{}, []string{}
		var duplicates, silent bool
		for _, id := range p.tasks {
			n := p.mail.sent[id]
			sent += n
			if n > 1 {
				twice = append(twice, fmt.Sprintf("%s ×%d", id, n))
				duplicates = true
			}
			if n == 0 {
				never = append(never, fmt.Sprintf("%s (%s)", id, fate[id]))
				silent = silent || fate[id] == lab.FateDone
			}
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(i + 1), p.strategy.name, fmt.Sprint(len(p.tasks)), fmt.Sprint(sent),
			orNone(twice), orNone(never), verdict(duplicates, silent)})
	}
	return t
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ", ")
}

func verdict(duplicates, silent bool) string {
	switch {
	case duplicates && silent:
		return "duplicates and loses"
	case duplicates:
		return "duplicates"
	case silent:
		return "loses silently"
	}
	return "safe"
}
