package faults_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsReliabilityTableNamesRealTests: every test docs/reliability.md
// names exists, so the table cannot drift from the tests that prove it.
func TestDocsReliabilityTableNamesRealTests(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/reliability.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(raw)
	if !strings.HasPrefix(section, "# Reliability\n") {
		t.Fatal("docs/reliability.md does not open with its # Reliability title")
	}
	names := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)(?:/[A-Za-z0-9_]+)?`").FindAllStringSubmatch(section, -1)
	if len(names) < 10 {
		t.Fatalf("docs/reliability.md names only %d tests", len(names))
	}
	var sources strings.Builder
	filepath.WalkDir("../../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != "../../.." {
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			b, _ := os.ReadFile(path)
			sources.Write(b)
		}
		return nil
	})
	all := sources.String()
	for _, m := range names {
		if !strings.Contains(all, "func "+m[1]+"(") {
			t.Errorf("docs/reliability.md names %s, which no test defines", m[1])
		}
	}
	// Subtest names the table gives must be cases of the conformance suite.
	for _, m := range regexp.MustCompile("`TestConformance/([A-Za-z]+)`").FindAllStringSubmatch(section, -1) {
		if !strings.Contains(all, `"`+m[1]+`"`) {
			t.Errorf("docs/reliability.md names the conformance case %s, which does not exist", m[1])
		}
	}
}
