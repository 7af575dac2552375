// Package tui is QueueLab's terminal UI: a lesson menu and a lesson view
// that animates a run. It knows nothing of backends: it runs a lesson with
// lesson.Run and draws only what the event stream says, so any lesson
// (in-memory or RabbitMQ, with or without a breaker) shows without code of
// its own here.
//
// Events reach the bubbletea program through a channel: a command blocks
// on it while nothing moves (no ticks, no CPU), and while tokens travel a
// frame tick (30 per second at most) drains whatever arrived, so bursts
// are coalesced into one redraw per frame. The queue boxes are the queues
// the events name, in order of first appearance, unless Config.Topology
// gives them.
//
// Model composes components in the manner of the bubbles library, each
// with its own state, an Update and a pure View: menu (menu.go), session
// (the run's life, session.go), stage (the scene, stage.go), logView
// (the pane, log.go), statusBar (status.go) and panels (panels.go).
// Model itself only routes messages and does what spans them (model.go).
package tui
