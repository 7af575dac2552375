// Package lab is QueueLab's shared vocabulary: the Event every backend and
// lesson emits, the Stream that stamps and fans events out to sinks, the
// Ledger that derives each task's fate from the stream, and the lesson-time
// Clock that scales every delay by --speed.
//
// Backends and lessons never print. Everything a person sees (the log, the
// JSON lines, the TUI, golden transcripts) is a rendering of the stream.
// Package lab imports nothing else from QueueLab; everything imports it.
package lab
