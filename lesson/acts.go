package lesson

import "sync"

// ServeActs answers the student's keys: every Act that arrives on acts
// (Options.Act) goes to answer, one at a time, in a goroutine of its own,
// until acts is closed or the returned stop is called. stop returns once
// the answer under way, if any, has returned; calling it again does
// nothing. With acts nil (no TUI: qlab run, the tests) it starts nothing.
//
// A lesson with Actions keeps only what its keys mean: answer is where
// it moves its state and replies (Act.Reply). A lesson's phases can serve
// the keys in turn, one answer for each, stopping one before the next.
func ServeActs(acts <-chan Act, answer func(Act)) (stop func()) {
	if acts == nil {
		return func() {}
	}
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case a, ok := <-acts:
				if !ok {
					return
				}
				answer(a)
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-ended
		})
	}
}
