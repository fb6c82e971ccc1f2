package ffmpeg

import (
	"strings"
	"unicode"
)

// EscapeFilterValue escapes v so that it arrives unchanged as the value of a
// filter option (key=<result>) inside a filtergraph string given to ffmpeg as
// one argument (-vf, -filter_complex, a lavfi input), without a shell. It
// applies ffmpeg's two escaping levels: the option level (\ ' :) and the
// filtergraph level (\ ' [ ] , ;). Whitespace is escaped too, because both
// levels trim it at the ends. Use it for file paths and expressions; for
// drawtext's text= use escapeDrawtext. NUL bytes cannot be passed to a
// process and are dropped.
func EscapeFilterValue(v string) string {
	return escapeLevel(escapeLevel(v, `\':`), `\'[],;`)
}

// escapeDrawtext escapes s for drawtext's text= option (with the default
// expansion=normal) inside a filtergraph string, so that drawtext draws s
// exactly: it adds the third level, drawtext's own expansion (\ and %), to
// EscapeFilterValue. Any text is safe, whatever its length or characters, but
// drawtext draws control characters as boxes or line breaks: pass prompts
// through Caption first. Writing the text to a file and using
// textfile=...:expansion=none avoids escaping altogether.
func escapeDrawtext(s string) string {
	return EscapeFilterValue(escapeLevel(s, `\%`))
}

// escapeLevel puts a backslash before every byte of specials and every
// whitespace byte, and drops NUL bytes.
func escapeLevel(s, specials string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0:
			continue
		case strings.IndexByte(specials, c) >= 0, c == ' ', c == '\t', c == '\n', c == '\r':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Caption turns arbitrary text (a prompt of any length) into what a frame can
// show: invalid UTF-8 repaired, control characters and runs of whitespace
// collapsed to one space, cut to maxRunes runes (with "…" when cut), then
// wrapped on word boundaries into lines of at most lineRunes runes, joined
// with "\n". Only the first maxRunes runes are looked at, so a 50,000-rune
// prompt costs no more than a short one.
func Caption(text string, maxRunes, lineRunes int) string {
	if maxRunes <= 0 {
		return ""
	}
	if lineRunes <= 0 {
		lineRunes = maxRunes
	}
	// Collapse whitespace while cutting, reading no further than needed.
	var words [][]rune
	var word []rune
	count, cut := 0, false
	for _, r := range text { // range yields U+FFFD for invalid bytes
		if blank(r) {
			if len(word) > 0 {
				words, word = append(words, word), nil
				count++ // the space that will separate it from the next word
			}
			continue
		}
		if count >= maxRunes {
			cut = true
			break
		}
		word = append(word, r)
		count++
	}
	if len(word) > 0 {
		words = append(words, word)
	}
	if cut && len(words) > 0 {
		last := words[len(words)-1]
		words[len(words)-1] = append(last, '…')
	}

	// Greedy wrap; words longer than a line are split.
	var lines []string
	var line []rune
	for _, w := range words {
		for len(w) > lineRunes {
			if len(line) > 0 {
				lines, line = append(lines, string(line)), nil
			}
			lines, w = append(lines, string(w[:lineRunes])), w[lineRunes:]
		}
		switch {
		case len(line) == 0:
			line = append(line, w...)
		case len(line)+1+len(w) <= lineRunes:
			line = append(append(line, ' '), w...)
		default:
			lines, line = append(lines, string(line)), append([]rune(nil), w...)
		}
	}
	if len(line) > 0 {
		lines = append(lines, string(line))
	}
	return strings.Join(lines, "\n")
}

func blank(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }
