// Package api holds the service's contract: openapi.yaml, the OpenAPI 3.1
// description of every route, served at GET /api/openapi.json.
package api

import (
	_ "embed"
	"encoding/json"
	"fmt"

	"gopkg.in/yaml.v3"
)

//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPIYAML is the document as written.
func OpenAPIYAML() []byte { return openAPIYAML }

// OpenAPIJSON is the document as JSON, as the service serves it.
func OpenAPIJSON() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(openAPIYAML, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml as JSON: %w", err)
	}
	return out, nil
}
