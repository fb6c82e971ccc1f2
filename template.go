// Package mediagen holds the deployment's own description, template.yaml,
// for the code that must agree with it at run time: the local workflow
// gives each task its function's Timeout (read with package deploy's
// parser), and FunctionFolder names each function's folder.
package mediagen

import (
	_ "embed"
	"strings"
	"unicode"
)

// Template is template.yaml as deployed.
//
//go:embed template.yaml
var Template []byte

// FunctionFolder is the folder under functions/ of the function whose
// logical ID is id: the ID without "Function", in kebab case
// (GenerationEstimateFunction: generation-estimate). The Makefile's
// build-%Function rule derives it the same way.
func FunctionFolder(id string) string {
	name := strings.TrimSuffix(id, "Function")
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rune(name[i-1])) || unicode.IsDigit(rune(name[i-1]))) {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
