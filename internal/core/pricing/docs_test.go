package pricing

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the price section of docs/api.md from prices.json")

const (
	docPath      = "../../../docs/api.md"
	pricesStart  = "<!-- prices:start -->\n"
	pricesEnd    = "<!-- prices:end -->"
	updateAdvice = "go test ./internal/core/pricing -run DocsPriceTable -update"
)

// The price table of docs/api.md is generated from the price file; this
// keeps the two from drifting apart.
func TestDocsPriceTableMatchesPriceFile(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, pricesStart)
	end := strings.Index(doc, pricesEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no %q … %q section", docPath, strings.TrimSpace(pricesStart), pricesEnd)
	}
	got := doc[start+len(pricesStart) : end]
	want := markdownTable(Default())
	if got == want {
		return
	}
	if *update {
		updated := doc[:start+len(pricesStart)] + want + doc[end:]
		if err := os.WriteFile(docPath, []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the price section of %s", docPath)
		return
	}
	t.Fatalf("the price section of %s differs from prices.json (run %s):\n%s", docPath, updateAdvice, lineDiff(got, want))
}

// lineDiff lists the lines that differ, "-" from the docs and "+" from the
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
