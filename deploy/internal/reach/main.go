// Command reach says, for each Lambda function under functions/, which
// methods of the DynamoDB adapter (*dynamostore.Store) its code can call:
// the methods reachable by call edges from the function's main in a Rapid
// Type Analysis call graph of the function's program, built as `make build`
// builds it (tag lambda.norpc). It prints one JSON object, folder → sorted
// method names. The deploy tests run it to derive each function's DynamoDB
// permissions from its code.
//
// Only call edges count: RTA also marks every exported method of a type
// that reaches an interface as reachable (reflection could call it), which
// would give every function every method.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/rta"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

const storeType = "*github.com/mediagen-dev/mediagen/internal/aws/dynamostore.Store"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "reach:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := &packages.Config{Mode: packages.LoadAllSyntax, BuildFlags: []string{"-tags=lambda.norpc"}, Tests: false}
	pkgs, err := packages.Load(cfg, "./functions/...")
	if err != nil {
		return err
	}
	if packages.PrintErrors(pkgs) > 0 {
		return fmt.Errorf("the functions do not load")
	}
	prog, ssaPkgs := ssautil.AllPackages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	out := map[string][]string{}
	for i, p := range ssaPkgs {
		if p == nil || p.Pkg.Name() != "main" {
			continue
		}
		folder := pkgs[i].PkgPath[strings.LastIndex(pkgs[i].PkgPath, "/")+1:]
		roots := []*ssa.Function{p.Func("main"), p.Func("init")}
		res := rta.Analyze(roots, true)
		methods := map[string]bool{}
		seen := map[*callgraph.Node]bool{}
		queue := []*callgraph.Node{}
		for _, r := range roots {
			if n := res.CallGraph.Nodes[r]; n != nil {
				queue = append(queue, n)
				seen[n] = true
			}
		}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			if f := n.Func; f != nil && f.Signature.Recv() != nil && f.Signature.Recv().Type().String() == storeType && f.Object() != nil && f.Object().Exported() {
				methods[f.Name()] = true
			}
			for _, e := range n.Out {
				if !seen[e.Callee] {
					seen[e.Callee] = true
					queue = append(queue, e.Callee)
				}
			}
		}
		names := make([]string, 0, len(methods))
		for m := range methods {
			names = append(names, m)
		}
		sort.Strings(names)
		out[folder] = names
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
