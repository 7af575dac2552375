package tui

import (
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// styles paints the lesson view. With colour off every style is plain,
// so frames are pure text (NO_COLOR, goldens).
type styles struct {
	color bool
	tones [5]lipgloss.Style // indexed by tone
	bold  lipgloss.Style
	title lipgloss.Style
}

func newStyles(color bool) styles {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	if color {
		r.SetColorProfile(termenv.ANSI)
	}
	s := styles{color: color}
	s.tones[plain] = r.NewStyle()
	s.tones[good] = r.NewStyle().Foreground(lipgloss.Color("2"))
	s.tones[warn] = r.NewStyle().Foreground(lipgloss.Color("3"))
	s.tones[bad] = r.NewStyle().Foreground(lipgloss.Color("1"))
	s.tones[faint] = r.NewStyle().Faint(true)
	s.bold = r.NewStyle().Bold(true)
	s.title = r.NewStyle().Bold(true).Foreground(lipgloss.Color("6"))
	return s
}

// paint renders text in tone t; plain text costs no escape codes.
func (s styles) paint(t tone, text string) string {
	if !s.color || t == plain || text == "" {
		return text
	}
	return s.tones[t].Render(text)
}

// cell is one terminal column of a line under construction.
type cell struct {
	r  rune
	tn tone
}

// canvas is one line of fixed width that text is written into at columns.
type canvas []cell

func newCanvas(w int) canvas {
	c := make(canvas, max(w, 0))
	for i := range c {
		c[i].r = ' '
	}
	return c
}

// put writes text from column x on, clipped to the canvas. Every rune is
// taken as one column wide: the view only writes ASCII and box glyphs.
func (c canvas) put(x int, text string, tn tone) int {
	for _, r := range text {
		if x >= 0 && x < len(c) {
			c[x] = cell{r, tn}
		}
		x++
	}
	return x
}

// render paints the canvas, one escape sequence per run of equal tone, and
// trims trailing blanks.
func (c canvas) render(s styles) string {
	end := len(c)
	for end > 0 && c[end-1].r == ' ' {
		end--
	}
	var b strings.Builder
	for i := 0; i < end; {
		j := i
		var run strings.Builder
		for j < end && c[j].tn == c[i].tn {
			run.WriteRune(c[j].r)
			j++
		}
		b.WriteString(s.paint(c[i].tn, run.String()))
		i = j
	}
	return b.String()
}

// titled renders the lesson title, bold and coloured when colour is on.
func (s styles) titled(text string) string {
	if !s.color {
		return text
	}
	return s.title.Render(text)
}
