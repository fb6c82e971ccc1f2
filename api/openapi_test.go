package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"

	"github.com/mediagen-dev/mediagen/api"
	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/longstory"
	"github.com/mediagen-dev/mediagen/shared/webhook"
)

var update = flag.Bool("update", false, "rewrite the generated part of openapi.yaml")

func TestDocumentIsValidOpenAPI31(t *testing.T) {
	for name, load := range map[string]func() ([]byte, error){
		"openapi.yaml": func() ([]byte, error) { return api.OpenAPIYAML(), nil },
		"served JSON":  api.OpenAPIJSON,
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := load()
			if err != nil {
				t.Fatal(err)
			}
			doc, err := openapi3.NewLoader().LoadFromData(raw)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if !doc.IsOpenAPI31OrLater() {
				t.Fatalf("openapi %q, want 3.1", doc.OpenAPI)
			}
			if err := doc.Validate(context.Background()); err != nil {
				t.Fatalf("the document is not valid OpenAPI 3.1: %v", err)
			}
		})
	}
}

const (
	beginMarker = "# BEGIN generated input schemas"
	endMarker   = "# END generated input schemas"
)

// generatedSchemas renders, from the catalog, the schema of every variant's
// input (Input_<version>, the same schema GET /api/models serves) and
// GenerateInputByVariant, which binds each model_version to its model and
// its input schema.
func generatedSchemas(t *testing.T) []byte {
	t.Helper()
	schemas := map[string]any{}
	var cases []any
	var versions []any
	for _, v := range catalog.All() {
		s := v.InputSchema()
		delete(s, "$schema") // the document's dialect applies
		schemas["Input_"+v.Version] = plain(t, s)
		versions = append(versions, v.Version)
		cases = append(cases, map[string]any{
			"if": map[string]any{"required": []any{"model_version"},
				"properties": map[string]any{"model_version": map[string]any{"const": v.Version}}},
			"then": map[string]any{"properties": map[string]any{
				"model": map[string]any{"const": v.Model},
				"input": map[string]any{"$ref": "#/components/schemas/Input_" + v.Version},
			}},
		})
	}
	schemas["GenerateInputByVariant"] = map[string]any{
		"description": "Each model_version with its model and the schema of its input (generated from the catalog).",
		"properties":  map[string]any{"model_version": map[string]any{"enum": versions}},
		"allOf":       cases,
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(schemas); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		out.WriteString("    " + line)
	}
	out.WriteString("\n")
	return out.Bytes()
}

// plain turns a value into what JSON decoding makes of it (json.Number
// enum values become numbers).
func plain(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return wholeNumbers(out)
}

// wholeNumbers makes the whole float64s of a decoded value int64s, so
// that YAML writes 6000023, not 6.000023e+06, for a maxLength.
func wholeNumbers(v any) any {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = wholeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = wholeNumbers(e)
		}
	}
	return v
}

// TestGeneratedInputSchemas keeps the per-variant input schemas in the
// document equal to the catalog's; -update rewrites them.
func TestGeneratedInputSchemas(t *testing.T) {
	doc := api.OpenAPIYAML()
	begin, end := bytes.Index(doc, []byte(beginMarker)), bytes.Index(doc, []byte(endMarker))
	if begin < 0 || end < begin {
		t.Fatalf("openapi.yaml lacks the %q ... %q block", beginMarker, endMarker)
	}
	begin += bytes.IndexByte(doc[begin:], '\n') + 1
	want := generatedSchemas(t)
	if bytes.Equal(doc[begin:end], want) {
		return
	}
	if !*update {
		t.Fatalf("the generated input schemas in openapi.yaml differ from the catalog's; run go test ./api -run TestGeneratedInputSchemas -update")
	}
	next := slices.Concat(doc[:begin], want, doc[end:])
	if err := os.WriteFile("openapi.yaml", next, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log("rewrote the generated input schemas in openapi.yaml")
}

// TestEnumsFollowTheCode checks the lists the document repeats from code.
func TestEnumsFollowTheCode(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]map[string]any `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(api.OpenAPIYAML(), &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.Components.Schemas
	prop := func(schema, name string) map[string]any {
		props, _ := schemas[schema]["properties"].(map[string]any)
		p, _ := props[name].(map[string]any)
		return p
	}
	items := func(p map[string]any) map[string]any { m, _ := p["items"].(map[string]any); return m }
	tests := []struct {
		name string
		enum any
		want []string
	}{
		{"Provider", schemas["Provider"]["enum"], catalog.Models()},
		{"LongVideoModel", schemas["LongVideoModel"]["enum"], longstory.Models()},
		{"language_code", prop("LongVideoCreateRequest", "language_code")["enum"], longstory.LanguageCodes()},
		{"estimate language_code", prop("LongVideoEstimateRequest", "language_code")["enum"], longstory.LanguageCodes()},
		{"video_style", prop("LongVideoCreateRequest", "video_style")["enum"], longstory.StyleNames()},
		{"generation webhook_events", items(prop("GenerateRequest", "webhook_events"))["enum"], catalog.GenerationEvents},
		{"long-form webhook_events", items(prop("LongVideoCreateRequest", "webhook_events"))["enum"], catalog.LongVideoEvents},
		{"generation webhook type", prop("GenerationWebhookPayload", "type")["enum"], catalog.GenerationEvents},
		{"long-form webhook type", prop("LongVideoWebhookPayload", "type")["enum"], catalog.LongVideoEvents},
		{"webhook attempt error", prop("WebhookAttempt", "error")["enum"], webhook.ErrorClasses},
	}
	for _, tt := range tests {
		got := []string{}
		list, _ := tt.enum.([]any)
		for _, v := range list {
			s, _ := v.(string)
			got = append(got, s)
		}
		want := slices.Clone(tt.want)
		slices.Sort(got)
		slices.Sort(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the document lists %v, the code %v", tt.name, got, want)
		}
	}
}

// A scene's narration limit varies by language, which a schema cannot say:
// maxLength is the largest and the description states each language's.
func TestNarrationLimitsFollowTheCode(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					MaxLength   int    `yaml:"maxLength"`
					Description string `yaml:"description"`
				} `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(api.OpenAPIYAML(), &doc); err != nil {
		t.Fatal(err)
	}
	narration := doc.Components.Schemas["Scene"].Properties["narration"]
	largest := 0
	for _, l := range longstory.Languages {
		largest = max(largest, l.MaxNarration())
		said := fmt.Sprintf("%d in %s", l.MaxNarration(), l.Code)
		if !strings.Contains(narration.Description, said) && !strings.Contains(narration.Description, fmt.Sprintf("%d characters (Unicode code points) in", l.MaxNarration())) {
			t.Errorf("Scene.narration's description does not give %s its %d characters", l.Code, l.MaxNarration())
		}
	}
	if narration.MaxLength != largest {
		t.Errorf("Scene.narration maxLength %d, want the largest limit %d", narration.MaxLength, largest)
	}
}
