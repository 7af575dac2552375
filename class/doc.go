// Package class is the instructor's room: a small HTTP server that keeps
// a class's progress (students × lessons and exercises) in memory, and the
// client a student's qlab uses to report to it.
//
// A report says one thing: student S finished item I (a lesson "Q07" or
// an exercise "E05") with a status, and for a failure its first line. It
// carries no source code and no secrets (the client strips both before
// sending, the server refuses what does not fit), so nothing a server
// receives can run code. The server binds loopback unless told otherwise,
// answers 400 to a report it cannot read and 503 when the room is full.
//
// Routes:
//
//	POST /api/report     one Report as JSON
//	GET  /api/progress   the whole room as JSON (Progress)
//	GET  /               a page that polls /api/progress and draws the table
package class
