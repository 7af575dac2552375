package tui

import (
	"fmt"
	"testing"
)

func TestDevPrint(t *testing.T) {
	m := testModel(fakeDLQ, 80, 24)
	m = feed(m, chainStart()...)
	m = frames(m, 4)
	fmt.Println(m.View())
	m = frames(m, 10)
	m = feed(m, chainEnd()...)
	m = frames(m, 5)
	fmt.Println(m.View())
	m = frames(m, 10)
	fmt.Println(m.View())
}
