// Package render turns the event stream into what people read: the
// seed-style log (one line per event, stamped with lesson time), JSON lines,
// the "what happened" table and measured tables. Renderers are pure
// functions of events, so a golden transcript is a rendering like any other.
package render
