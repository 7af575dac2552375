package lessons

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// maxNoticeSentences is what lesson.Lesson promises of a Notice: two or
// three sentences. The story in full is the lesson's note (docs/lessons.md)
// and its package comment; the Notice is what a student reads before the
// log starts scrolling.
const maxNoticeSentences = 3

// maxNoticeRunes keeps three sentences from being three paragraphs: a
// notice reads in one glance (about six lines at 80 columns).
const maxNoticeRunes = 500

// TestNoticeIsShort holds every lesson's Notice, and each backend's own
// (Notices), to maxNoticeSentences sentences of maxNoticeRunes in all.
func TestNoticeIsShort(t *testing.T) {
	for _, l := range All {
		texts := map[string]string{"Notice": l.Notice}
		for b, n := range l.Notices {
			texts["Notices["+string(b)+"]"] = n
		}
		for name, text := range texts {
			s := sentences(text)
			assert.LessOrEqual(t, len(s), maxNoticeSentences, "%s's %s has %d sentences:\n%s",
				l.ID, name, len(s), strings.Join(s, "\n"))
			assert.LessOrEqual(t, utf8.RuneCountInString(text), maxNoticeRunes, "%s's %s is too long:\n%s", l.ID, name, text)
		}
	}
}

// sentences splits text where a sentence ends: a '.', '?' or '!' right
// after a word (and any closing quote or bracket after it), followed by
// the end of the text or by a space. What follows the space may be a
// capital, a digit, a bracket ("(a) A row…") or a name in lower case
// ("drop-head confirms…"): a lesson's sentences start with all of them. A
// full stop inside a number ("3.10.8", "3.501s") has no space after it,
// so it ends nothing; neither does an abbreviation's ("e.g."), nor the
// marks of an operator ("x ?? 1").
func sentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		if c := text[i]; c != '.' && c != '?' && c != '!' {
			continue
		}
		if i == 0 || strings.ContainsRune(" .?!", rune(text[i-1])) || text[i] == '.' && abbreviation(text[start:i+1]) {
			continue
		}
		end := i + 1
		for end < len(text) && strings.ContainsRune(`)"'’”`, rune(text[end])) {
			end++
		}
		if end < len(text) && text[end] != ' ' {
			continue
		}
		out = append(out, strings.TrimSpace(text[start:end]))
		start, i = end, end
	}
	if rest := strings.TrimSpace(text[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

// abbreviation reports whether text ends with an abbreviation whose full
// stop ends no sentence.
func abbreviation(text string) bool {
	for _, a := range []string{"e.g.", "i.e.", "cf.", "vs.", "etc."} {
		if strings.HasSuffix(text, " "+a) || strings.HasSuffix(text, "("+a) || text == a {
			return true
		}
	}
	return false
}

// TestSentences pins the splitting the Notice test relies on.
func TestSentences(t *testing.T) {
	for text, want := range map[string]int{
		"One. Two? Three!":                          3,
		"On 3.10.8 and 4.3.6 alike, every 3.501s.":  1,
		"A cap, e.g. Q07. Then more.":               2,
		"Ends at a bracket (like this.) Next one.":  2,
		"Mails three ways. (a) A timer. (b) Queue.": 3,
		"Two s. 15 deliveries later.":               2,
		"Ends. drop-head starts one":                2,
		"The operator x ?? 1 ends nothing":          1,
		"One without a stop":                        1,
		`He said "stop." Then left.`:                2,
	} {
		assert.Len(t, sentences(text), want, "%q: %q", text, sentences(text))
	}
}
