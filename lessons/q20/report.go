package q20

import (
	"fmt"
	"strconv"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// stepTable is each message: where the kill caught it and what became of it.
func stepTable(outs []outcome, on lab.Backend) render.Table {
	crash := "the SIGKILL"
	if on == lab.InMem {
		crash = "the crash"
	}
	t := render.Table{
		Title:  "Where " + crash + " caught each message, and what the survivor did",
		Header: []string{"message", "the kill caught it", "redelivered", "survivor", "sends", "row"},
		Notes: []string{
			"sends: how often the mail API sent it, both workers together; row: its status at " +
				"the end (- where the store died with the process).",
		},
	}
	for _, o := range outs {
		for i, id := range o.ids() {
			did := o.did[id]
			if did == "" {
				did = "-"
			}
			row := string(o.status[id])
			if row == "" {
				row = "-"
			}
			t.Rows = append(t.Rows, []string{id, script[i].String(), yesNo(o.redelivered[id]),
				did, strconv.Itoa(o.sends[id]), row})
		}
	}
	for _, o := range outs {
		if o.pid != 0 {
			t.Notes = append(t.Notes, fmt.Sprintf("%s1–%s5: %s was process %d, ended by "+
				"SIGKILL (%s) and waited for.", o.prefix, o.prefix, Crashing, o.pid, o.exit))
		}
	}
	return t
}

// countTable is what happened, counted per policy.
func countTable(outs []outcome, on lab.Backend) render.Table {
	t := render.Table{
		Title: "What happened: redeliveries absorbed, duplicates sent, messages lost",
		Header: []string{"survivor's policy", "held", "redelivered", "absorbed", "sent twice",
			"lost", "rows kept"},
		Notes: []string{
			"absorbed: redelivered copies skipped because the store said SENT (the seed's check). " +
				"sent twice: a duplicate the customer receives. lost: never sent.",
			"A SENDING row is the window the seed does not mention: its worker died after the " +
				"claim, before or after the send, and the row cannot say which. Resending it " +
				"(the lab's pick: a greeting twice beats none) duplicates R3; skipping it loses " +
				"S4. Only the mail API can close the window: an idempotency key per message, " +
				"stored with the claim and sent with the request (Q06).",
			"The resend rule (SENDING on a redelivery means its worker died) holds here only " +
				"because the lab killed that worker. A redelivery means the channel died, not " +
				"the worker: in Q21 the worker whose node stops lives on, still sending, when " +
				"its copy comes back. Resending there sends twice; Q21's worker waits for SENT.",
		},
	}
	if on == lab.InMem {
		t.Notes = append(t.Notes, "In memory the crash took the process: queue, worker and map "+
			"store. Nothing was redelivered, no row was kept, and the messages not yet sent "+
			"are lost whatever the policy.")
	} else {
		t.Notes = append(t.Notes, "The worker process and this one share the store (SQLite "+
			"file, or PostgreSQL with QLAB_DATABASE_URL): every row outlived the crash.")
	}
	for _, o := range outs {
		redelivered, absorbed, twice, lost := 0, 0, 0, 0
		for _, id := range o.ids() {
			if o.redelivered[id] {
				redelivered++
			}
			if o.did[id] == "skipped SENT" {
				absorbed++
			}
			switch n := o.sends[id]; {
			case n > 1:
				twice++
			case n == 0:
				lost++
			}
		}
		t.Rows = append(t.Rows, []string{o.name, strconv.Itoa(len(o.ids())),
			strconv.Itoa(redelivered), strconv.Itoa(absorbed), strconv.Itoa(twice),
			strconv.Itoa(lost), fmt.Sprintf("%d of %d", o.kept, len(o.ids()))})
	}
	return t
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
