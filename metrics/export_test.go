package metrics

// Kept is how many attempts and arrivals the sink still holds, for the
// external tests (metrics_test imports the lessons, which import metrics).
func (m *Metrics) Kept() (started, arrived int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.started), len(m.arrived)
}
