package docs

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestContributingNamesOnlyWhatExists: every path, make target, test name,
// Go name and go test command that docs/contributing.md puts in code font
// is there, so that its recipes are the repository's, not a memory of it.
func TestContributingNamesOnlyWhatExists(t *testing.T) {
	raw, err := os.ReadFile("contributing.md")
	if err != nil {
		t.Fatal(err)
	}
	refs := codeRefs(string(raw))
	kinds := map[string]int{}
	for _, r := range refs {
		kind, err := checkRef(root, r.text)
		kinds[kind]++
		if err != nil {
			t.Errorf("contributing.md:%d: `%s`: %v", r.line, r.text, err)
		}
	}
	t.Logf("checked by kind: %v", kinds)
	// The recipes name at least this much: a parser that found none would
	// check nothing.
	for kind, least := range map[string]int{"path": 20, "test": 10, "go test": 8, "make": 2, "go name": 3} {
		if kinds[kind] < least {
			t.Errorf("found %d %s references in contributing.md, want at least %d (found: %v)", kinds[kind], kind, least, kinds)
		}
	}
}

func TestTheREADMELinksTheContributorsGuide(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range relativeLinks(string(raw)) {
		if l.target == "docs/contributing.md" {
			return
		}
	}
	t.Error("README.md has no link to docs/contributing.md")
}

// The checker refuses what does not exist, of each kind, and accepts what
// does.
func TestCheckRef(t *testing.T) {
	tests := []struct {
		ref, kind string
		ok        bool
	}{
		{"internal/api/routes/routes.go", "path", true},
		{"internal/api/routes/nothing.go", "path", false},
		{"functions/<folder>/main.go", "path", true},
		{"nothing/<folder>/main.go", "path", false},
		{"make test", "make", true},
		{"make nothing", "make", false},
		{"TestTableListsEveryRouteFunctionOnce", "test", true},
		{"TestNothingAtAll", "test", false},
		{"routes.Table", "go name", true},
		{"routes.Nothing", "go name", false},
		{"nothing.Table", "go name", false},
		{"go test ./internal/api/routes -run TestTableListsEveryRouteFunctionOnce", "go test", true},
		{"go test ./internal/api/routes -run TestNothingAtAll", "go test", false},
		{"go test ./internal/core/catalog -run TestOpenAPIDocumentsExactlyTheTablesRoutes", "go test", false},
		{"go test ./internal/nothing", "go test", false},
		{"go test -race ./internal/local/... -run TestHeartbeatsKeepTheTaskAlive -v", "go test", true},
		{"go test ./internal/api/routes ./deploy", "go test", true},
		{"npm ci --prefix tools", "", true},
	}
	for _, tt := range tests {
		kind, err := checkRef(root, tt.ref)
		if kind != tt.kind || (err == nil) != tt.ok {
			t.Errorf("checkRef(%q) = %q, %v; want kind %q, ok %v", tt.ref, kind, err, tt.kind, tt.ok)
		}
	}
}

type codeRef struct {
	line int
	text string
}

var recipeSpan = regexp.MustCompile("`([^`]+)`")

// codeRefs are a document's code spans and the lines of its fenced
// blocks, with their line numbers.
func codeRefs(doc string) []codeRef {
	var refs []codeRef
	fenced := false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			if s := strings.TrimSpace(line); s != "" {
				refs = append(refs, codeRef{i + 1, s})
			}
			continue
		}
		for _, m := range recipeSpan.FindAllStringSubmatch(line, -1) {
			refs = append(refs, codeRef{i + 1, m[1]})
		}
	}
	return refs
}

var (
	testName = regexp.MustCompile(`^Test[A-Za-z0-9_]+$`)
	goName   = regexp.MustCompile(`^([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9]*)$`)
	pathRef  = regexp.MustCompile(`^[A-Za-z0-9_.<>-]+(/[A-Za-z0-9_.<>-]*)*$`)
	makeRule = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`)
)

// checkRef says what kind of reference ref is ("" for none it checks:
// prose in code font) and whether it names something of the repository
// at root.
func checkRef(root, ref string) (string, error) {
	switch {
	case strings.HasPrefix(ref, "go test "):
		return "go test", checkGoTest(root, ref)
	case strings.HasPrefix(ref, "make "):
		target := strings.TrimPrefix(ref, "make ")
		raw, err := os.ReadFile(filepath.Join(root, "Makefile"))
		if err != nil {
			return "make", err
		}
		for _, m := range makeRule.FindAllStringSubmatch(string(raw), -1) {
			if m[1] == target {
				return "make", nil
			}
		}
		return "make", fmt.Errorf("the Makefile has no target %s", target)
	case testName.MatchString(ref):
		found, err := testsNamed(root, "./...", regexp.MustCompile("^"+ref+"$"))
		if err == nil && !found {
			err = fmt.Errorf("no _test.go file declares %s", ref)
		}
		return "test", err
	case goName.MatchString(ref):
		m := goName.FindStringSubmatch(ref)
		return "go name", checkGoName(root, m[1], m[2])
	case pathRef.MatchString(ref) && (strings.Contains(ref, "/") || strings.Contains(ref, ".")) && !strings.Contains(ref, "..."):
		return "path", checkPath(root, ref)
	}
	return "", nil
}

// checkPath: the file or folder exists; a path with a <placeholder> needs
// the folder before it.
func checkPath(root, ref string) error {
	if i := strings.Index(ref, "<"); i >= 0 {
		ref = ref[:i]
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(ref))); err != nil {
		return fmt.Errorf("no such file or folder: %w", err)
	}
	return nil
}

// checkGoTest: each package pattern of the command has Go files, and its
// -run pattern matches a test of one of them.
func checkGoTest(root, cmd string) error {
	var pkgs []string
	var run *regexp.Regexp
	fields := strings.Fields(strings.TrimPrefix(cmd, "go test "))
	for i := 0; i < len(fields); i++ {
		switch f := fields[i]; {
		case f == "-run" && i+1 < len(fields):
			i++
			re, err := regexp.Compile(fields[i])
			if err != nil {
				return fmt.Errorf("-run %s: %w", fields[i], err)
			}
			run = re
		case strings.HasPrefix(f, "./"):
			pkgs = append(pkgs, f)
		}
	}
	if len(pkgs) == 0 {
		return errors.New("names no package")
	}
	found := false
	for _, p := range pkgs {
		dir := filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/")))
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("package %s: %w", p, err)
		}
		if run == nil {
			continue
		}
		ok, err := testsNamed(root, p, run)
		if err != nil {
			return err
		}
		found = found || ok
	}
	if run != nil && !found {
		return fmt.Errorf("-run %s matches no test of %v", run, pkgs)
	}
	return nil
}

// testsNamed reports whether a _test.go file of the package pattern (a
// folder, or a tree with /...) declares a test whose name matches re.
func testsNamed(root, pattern string, re *regexp.Regexp) (bool, error) {
	tree := strings.HasSuffix(pattern, "/...")
	dir := filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(strings.TrimSuffix(pattern, "..."), "/")))
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (!tree || d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if found || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && re.MatchString(fn.Name.Name) {
				found = true
			}
		}
		return nil
	})
	return found, err
}

// checkGoName: a package named pkg (a folder of that name under internal/ or
// at the root) declares name at its top level.
func checkGoName(root, pkg, name string) error {
	var dirs []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if n := d.Name(); n == "node_modules" || n == "testdata" || (strings.HasPrefix(n, ".") && path != root) {
			return filepath.SkipDir
		}
		if d.Name() == pkg {
			dirs = append(dirs, path)
		}
		return nil
	})
	if len(dirs) == 0 {
		return fmt.Errorf("no package %s", pkg)
	}
	for _, dir := range dirs {
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, p := range pkgs {
			if p.Name != pkg {
				continue
			}
			for _, f := range p.Files {
				if declares(f, name) {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("package %s (%v) declares no %s", pkg, dirs, name)
}

// declares reports whether f declares name at its top level (a function,
// type, variable or constant; not a method).
func declares(f *ast.File, name string) bool {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name == name {
				return true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.Name == name {
						return true
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name == name {
							return true
						}
					}
				}
			}
		}
	}
	return false
}
