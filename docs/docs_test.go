// Package docs holds the repository's documentation; its tests check what a
// newcomer would: the README is short, and every relative link in it and in
// the chapters leads somewhere.
package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines is what a newcomer reads in five minutes.
const readmeMaxLines = 300

// root is the repository's root, seen from this package.
const root = ".."

func TestTheREADMEIsAtMost300Lines(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, want at most %d: move detail into a chapter of docs/", n, readmeMaxLines)
	}
}

// TestEveryRelativeLinkInTheDocsResolves: each relative link of README.md
// and docs/*.md names a file of the repository, and each #anchor a heading
// of the file it points to (as GitHub renders it).
func TestEveryRelativeLinkInTheDocsResolves(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	if len(files) < 10 {
		t.Fatalf("found only %v; want README.md and the chapters of docs/", files)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{} // by cleaned path
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		anchors[path] = headingAnchors(string(raw))
		return anchors[path], nil
	}
	checked := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range relativeLinks(string(raw)) {
			checked++
			target, anchor, _ := strings.Cut(l.target, "#")
			path := file
			if target != "" {
				path = filepath.Clean(filepath.Join(filepath.Dir(file), target))
				abs, err := filepath.Abs(path)
				if err != nil {
					t.Fatal(err)
				}
				if abs != absRoot && !strings.HasPrefix(abs, absRoot+string(filepath.Separator)) {
					t.Errorf("%s:%d: %s points outside the repository, where a clone has nothing", file, l.line, l.target)
					continue
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d: %s: no such file", file, l.line, l.target)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s:%d: %s: an anchor into a file that is not markdown", file, l.line, l.target)
				continue
			}
			a, err := anchorsOf(path)
			if err != nil {
				t.Fatal(err)
			}
			if !a[anchor] {
				t.Errorf("%s:%d: %s: %s has no heading whose anchor is #%s", file, l.line, l.target, path, anchor)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d links; the link pattern no longer finds them", checked)
	}
}

func TestLinkAndAnchorParsing(t *testing.T) {
	tests := []struct {
		name string
		md   string
		want []string
	}{
		{"link and image", "see [a](docs/a.md#x) and ![b](b.png)\n", []string{"1 docs/a.md#x", "1 b.png"}},
		{"absolute URLs are not relative", "[w](https://example.com) [m](mailto:a@b.c)\n", nil},
		{"code is not a link", "`[a](x.md)`\n```\n[b](y.md)\n```\n[c](z.md)\n", []string{"5 z.md"}},
		{"code in the link text", "[`api/openapi.yaml`](../api/openapi.yaml)\n", []string{"1 ../api/openapi.yaml"}},
		{"a title after the target", `[a](a.md "the title")` + "\n", []string{"1 a.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range relativeLinks(tt.md) {
				got = append(got, fmt.Sprintf("%d %s", l.line, l.target))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("links %q, want %q", got, tt.want)
			}
		})
	}
	anchorTests := []struct {
		heading, want string
	}{
		{"## The local runtime: `mediagen serve`", "the-local-runtime-mediagen-serve"},
		{"## Safe retries: `Idempotency-Key`", "safe-retries-idempotency-key"},
		{"### Within Step Functions' limits by design", "within-step-functions-limits-by-design"},
		{"# Données (local)", "données-local"},
	}
	for _, tt := range anchorTests {
		if a := headingAnchors(tt.heading + "\n"); !a[tt.want] {
			t.Errorf("anchors of %q are %v, want %q", tt.heading, a, tt.want)
		}
	}
	if a := headingAnchors("## Slots\n\n## Slots\n```\n# not a heading\n```\n"); !a["slots"] || !a["slots-1"] || a["not-a-heading"] {
		t.Errorf("anchors %v, want slots and slots-1 and none from code", a)
	}
}

type link struct {
	line   int
	target string
}

var (
	linkPattern = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan    = regexp.MustCompile("`[^`]*`")
	hasScheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// relativeLinks lists the markdown links and images of md whose target has
// no scheme, outside code blocks and code spans.
func relativeLinks(md string) []link {
	var links []link
	for i, line := range proseLines(md) {
		for _, m := range linkPattern.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, "``"), -1) {
			if !hasScheme.MatchString(m[1]) {
				links = append(links, link{line: i + 1, target: m[1]})
			}
		}
	}
	return links
}

// headingAnchors are the anchors GitHub gives the headings of md: the text
// lowercased, every character but letters, digits, marks, "_", "-" and
// spaces dropped, spaces turned to "-", and "-1", "-2" … on repeats.
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(md) {
		text, ok := headingText(line)
		if !ok {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case unicode.IsLetter(r), unicode.IsNumber(r), unicode.IsMark(r), r == '_', r == '-':
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// headingText is the text of an ATX heading line ("## Text").
func headingText(line string) (string, bool) {
	level := len(line) - len(strings.TrimLeft(line, "#"))
	if level < 1 || level > 6 || !strings.HasPrefix(line[level:], " ") {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[level:]), "#")), true
}

// proseLines are md's lines with those of fenced code blocks blanked, so
// line numbers stay those of the file.
func proseLines(md string) []string {
	var lines []string
	inFence := false
	s := bufio.NewScanner(strings.NewReader(md))
	s.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			lines = append(lines, "")
			continue
		}
		if inFence {
			line = ""
		}
		lines = append(lines, line)
	}
	return lines
}
