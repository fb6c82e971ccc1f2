package lambdawiring

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/api/routes"
)

func TestEveryFunctionFolderHasAHandlerAndBuildsOffline(t *testing.T) {
	entries, err := os.ReadDir("../../../functions")
	if err != nil {
		t.Fatal(err)
	}
	var folders []string
	for _, e := range entries {
		if e.IsDir() {
			folders = append(folders, e.Name())
		}
	}
	if !slices.Equal(folders, FunctionNames()) {
		t.Fatalf("functions/ holds %v, the registry %v", folders, FunctionNames())
	}
	t.Setenv("AWS_REGION", "us-east-1")
	for _, name := range FunctionNames() {
		vars, err := ReadsEnvironment(context.Background(), name)
		if err != nil {
			t.Errorf("%s does not build: %v", name, err)
			continue
		}
		h, err := Handler(context.Background(), name)
		if err == nil {
			// lambda.NewHandler panics on a handler lambda.Start would refuse.
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s: not a valid Lambda handler: %v", name, r)
					}
				}()
				lambda.NewHandler(h)
			}()
		}
		t.Logf("%s reads %v", name, vars)
	}
}

// Every route of the table is served by a function of the registry (and
// so of functions/, above), whose constructor (lambdawiring.<Name> or
// storewiring.<Name>) builds that route: it names routes.<Name>.
func TestEveryRouteIsBuiltByItsFunctionsConstructor(t *testing.T) {
	fset := token.NewFileSet()
	bodies := map[string]*ast.FuncDecl{} // "lambdawiring.Generate" -> its declaration
	for _, dir := range []string{".", "storewiring"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
					bodies[f.Name.Name+"."+fn.Name.Name] = fn
				}
			}
		}
	}
	for _, r := range routes.Table() {
		c, ok := Functions()[r.Function]
		if !ok {
			t.Errorf("route %s: functions/%s is not in Functions()", r.Key(), r.Function)
			continue
		}
		full := goruntime.FuncForPC(reflect.ValueOf(c).Pointer()).Name() // .../storewiring.Status
		short := full[strings.LastIndex(full, "/")+1:]
		decl, ok := bodies[short]
		if !ok || !strings.HasSuffix(short, "."+r.Name()) {
			t.Errorf("route %s: functions/%s is built by %s, want a constructor named %s in lambdawiring or storewiring", r.Key(), r.Function, short, r.Name())
			continue
		}
		names := false
		ast.Inspect(decl.Body, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "routes" && sel.Sel.Name == r.Name() {
					names = true
				}
			}
			return true
		})
		if !names {
			t.Errorf("route %s: %s does not build routes.%s", r.Key(), short, r.Name())
		}
	}
}
