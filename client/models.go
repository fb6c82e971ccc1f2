package client

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
)

// Model is one variant of GET /api/models: the service's view
// (apiview.Model), with Fields to read its input schema.
type Model apiview.Model

// Price is a variant's price rule in credits: CreditsPerUnit of the first
// case whose every When field has the request's value (defaults included),
// else the rule's own, times the units, rounded up to 0.01.
type Price = apiview.Price

// PriceCase is one conditional price.
type PriceCase = apiview.PriceCase

// Field is one input field, read from a Model's InputSchema.
type Field struct {
	Name        string
	Type        string // string, boolean, enum, image or image_list
	Required    bool
	Enum        []string
	Default     string
	Description string
	MinLength   int
	MaxLength   int
	MaxItems    int
}

type propertySchema struct {
	Type        string `json:"type"`
	Description string `json:"description"`
	Enum        []any  `json:"enum"`
	Default     any    `json:"default"`
	MinLength   int    `json:"minLength"`
	MaxLength   int    `json:"maxLength"`
	MaxItems    int    `json:"maxItems"`
	Pattern     string `json:"pattern"`
	Items       *struct {
		Pattern string `json:"pattern"`
	} `json:"items"`
}

// Fields lists the input fields in the service's order (x-field-order),
// read from the input schema.
func (m Model) Fields() ([]Field, error) {
	var s struct {
		Properties map[string]propertySchema `json:"properties"`
		Required   []string                  `json:"required"`
		Order      []string                  `json:"x-field-order"`
	}
	if err := json.Unmarshal(m.InputSchema, &s); err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", m.Version, err)
	}
	order := s.Order
	for name := range s.Properties {
		if !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	var out []Field
	for _, name := range order {
		p, ok := s.Properties[name]
		if !ok {
			continue
		}
		f := Field{Name: name, Type: p.Type, Required: slices.Contains(s.Required, name), Description: p.Description,
			MinLength: p.MinLength, MaxLength: p.MaxLength, MaxItems: p.MaxItems}
		switch {
		case len(p.Enum) > 0:
			f.Type = "enum"
			for _, e := range p.Enum {
				if s, ok := e.(string); ok {
					f.Enum = append(f.Enum, s)
				}
			}
		case p.Type == "string" && strings.Contains(p.Pattern, "://"):
			f.Type = "image"
		case p.Type == "array":
			f.Type = "image_list"
		}
		if p.Default != nil {
			f.Default = fmt.Sprint(p.Default)
		}
		out = append(out, f)
	}
	return out, nil
}
