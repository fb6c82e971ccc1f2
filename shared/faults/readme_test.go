package faults_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEReliabilityTableNamesRealTests: every test the README's
// reliability section names exists, so the table cannot drift from the
// tests that prove it.
func TestREADMEReliabilityTableNamesRealTests(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Reliability\n")
	if !ok {
		t.Fatal("the README has no Reliability section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	names := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)(?:/[A-Za-z0-9_]+)?`").FindAllStringSubmatch(section, -1)
	if len(names) < 10 {
		t.Fatalf("the section names only %d tests", len(names))
	}
	var sources strings.Builder
	filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != "../.." {
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
			t.Errorf("the README names %s, which no test defines", m[1])
		}
	}
	// Subtest names the table gives must be cases of the conformance suite.
	for _, m := range regexp.MustCompile("`TestConformance/([A-Za-z]+)`").FindAllStringSubmatch(section, -1) {
		if !strings.Contains(all, `"`+m[1]+`"`) {
			t.Errorf("the README names the conformance case %s, which does not exist", m[1])
		}
	}
}
