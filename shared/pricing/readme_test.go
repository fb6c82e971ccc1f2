package pricing

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the README price section from prices.json")

const (
	readmePath   = "../../README.md"
	pricesStart  = "<!-- prices:start -->\n"
	pricesEnd    = "<!-- prices:end -->"
	updateAdvice = "go test ./shared/pricing -run README -update"
)

// The README's price table is generated from the price file; this keeps the
// two from drifting apart.
func TestREADMEPriceTableMatchesPriceFile(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	start := strings.Index(readme, pricesStart)
	end := strings.Index(readme, pricesEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no %q … %q section", readmePath, strings.TrimSpace(pricesStart), pricesEnd)
	}
	got := readme[start+len(pricesStart) : end]
	want := MarkdownTable(Default())
	if got == want {
		return
	}
	if *update {
		updated := readme[:start+len(pricesStart)] + want + readme[end:]
		if err := os.WriteFile(readmePath, []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the price section of %s", readmePath)
		return
	}
	t.Fatalf("the README price section differs from prices.json (run %s):\n%s", updateAdvice, lineDiff(got, want))
}

// lineDiff lists the lines that differ, "-" from the README and "+" from the
// price file; enough to see what drifted in a short table.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			fmt.Fprintf(&b, "line %d:\n- %s\n+ %s\n", i+1, gl, wl)
		}
	}
	return b.String()
}
