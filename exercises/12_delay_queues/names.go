package delayqueues

// Names are one check's queue names (the document's, under the
// checker's private prefix): use them, not the document's literals.
type Names struct {
	WorkQueue string // email-queue: a retry comes back here when its wait is over
	Retry     string // email-retry-queue: every retry queue's name starts with it
}
