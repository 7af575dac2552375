// Package survivor is exercise 16 (lesson Q20, a crash and redelivery):
// the birthday worker that takes over when another dies. Worker-1 held
// five messages (prefetch 5, manual acks) and was killed, each message
// caught at another step: sent and marked SENT, sent but still SENDING,
// claimed SENDING but not sent, not claimed at all. The broker hands all
// five to your worker with the redelivered flag set; the status store,
// which outlived the crash, says how far each got. Skip what is SENT;
// claim and send what is QUEUED; and a row left SENDING by the dead worker
// cannot say whether its send went out: resend it (a second greeting
// beats none). A copy that was not redelivered whose row is SENDING
// belongs to a worker that is alive and sending it: leave it.
//
// Edit survivor.go only. names.go holds the delivery and the send;
// check_test.go is the checker (`qlab ex check 16`). It plays the dead
// worker's steps on the store (store.NewMemory: the SQL stores' contract,
// standing for the database that outlives the process), redelivers its
// messages to your Handle, and reads every row at the end.
package survivor
