// Package mediagen holds the SAM template, template.yaml, so that the local
// runtime gives each function what the deployed stack gives it (its
// Timeout, read with package deploy's parser).
package mediagen

import _ "embed"

// Template is template.yaml.
//
//go:embed template.yaml
var Template []byte
