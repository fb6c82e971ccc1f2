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
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
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
// input (Input_<version>, the schema GET /api/models serves with each
// field's default said in its description: see defaultsSaid), one
// request schema per variant (GenerateRequest_<version>: its model and
// model_version as constants, its input, and the fields every body shares),
// and GenerateRequest, the oneOf of them with model_version as its
// discriminator. Generators (openapi-typescript, @hey-api/openapi-ts,
// oapi-codegen) follow oneOf and discriminator, not if/then, so each
// variant's input becomes a type of its own.
func generatedSchemas(t *testing.T) []byte {
	t.Helper()
	schemas := map[string]any{}
	var variants []any
	mapping := map[string]any{}
	for _, v := range catalog.All() {
		s := v.InputSchema()
		delete(s, "$schema") // the document's dialect applies
		schemas["Input_"+v.Version] = defaultsSaid(plain(t, s))
		name := "GenerateRequest_" + v.Version
		ref := "#/components/schemas/" + name
		variants = append(variants, map[string]any{"$ref": ref})
		mapping[v.Version] = ref
		maxImages, imagesSay := catalog.MaxImageCount, "Images to make, charged per image (default 1)."
		if v.Version == "zeta-pro" {
			imagesSay = "Images to make, charged per image (default 1); the same as `input.num_images`, which may give it instead."
		}
		if v.Kind == domain.MediaVideo {
			maxImages, imagesSay = 1, "A video variant makes one video: 1 if given."
		}
		schemas[name] = map[string]any{
			"title":                v.Model + "/" + v.Version + " request",
			"description":          "The body that runs " + v.Model + "/" + v.Version + " (" + string(v.Kind) + ").",
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"model", "model_version", "input"},
			"properties": map[string]any{
				"model":            map[string]any{"type": "string", "const": v.Model, "description": "The provider."},
				"model_version":    map[string]any{"type": "string", "const": v.Version, "description": "The variant."},
				"input":            map[string]any{"$ref": "#/components/schemas/Input_" + v.Version},
				"image_count":      map[string]any{"type": "integer", "minimum": 1, "maximum": maxImages, "description": imagesSay},
				"webhook_url":      map[string]any{"$ref": "#/components/schemas/WebhookURL"},
				"webhook_events":   map[string]any{"$ref": "#/components/schemas/GenerationWebhookEvents"},
				"deadline_seconds": map[string]any{"$ref": "#/components/schemas/DeadlineSeconds"},
			},
			"dependentRequired": map[string]any{"webhook_events": []any{"webhook_url"}},
		}
	}
	schemas["GenerateRequest"] = map[string]any{
		"description": "The body of `POST /api/generations/generate` (and of its estimate): one variant's request, " +
			"chosen by `model_version` (with its `model`). `input` carries that variant's fields, described by its " +
			"`Input_<model_version>` schema (and by `input_schema` in `GET /api/models`). All enumerated `input` values " +
			"may be sent as strings, numeric ones also as numbers. Generated from the catalog.",
		"oneOf":         variants,
		"discriminator": map[string]any{"propertyName": "model_version", "mapping": mapping},
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

// defaultsSaid moves each property's default of an input schema into its
// description ("Default: 8."). openapi-typescript, with its default flags
// (defaultNonNullable), makes a property with a default required in a
// component schema, so a body that leaves duration out would not compile;
// the service applies the defaults whatever the document says, and
// GET /api/models keeps them as data.
func defaultsSaid(schema any) any {
	props, _ := schema.(map[string]any)["properties"].(map[string]any)
	for _, p := range props {
		field, ok := p.(map[string]any)
		if !ok {
			continue
		}
		d, ok := field["default"]
		if !ok {
			continue
		}
		delete(field, "default")
		said := fmt.Sprintf("Default: %v.", d)
		if desc, _ := field["description"].(string); desc != "" {
			said = desc + " " + said
		}
		field["description"] = said
	}
	return schema
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
		{"LongVideoModel", schemas["LongVideoModel"]["enum"], longform.Models()},
		{"language_code", prop("LongVideoCreateRequest", "language_code")["enum"], longform.LanguageCodes()},
		{"estimate language_code", prop("LongVideoEstimateRequest", "language_code")["enum"], longform.LanguageCodes()},
		{"video_style", prop("LongVideoCreateRequest", "video_style")["enum"], longform.StyleNames()},
		{"generation webhook_events", items(schemas["GenerationWebhookEvents"])["enum"], domain.GenerationEvents},
		{"long-form webhook_events", items(prop("LongVideoCreateRequest", "webhook_events"))["enum"], domain.LongVideoEvents},
		{"generation webhook type", prop("GenerationWebhookPayload", "type")["enum"], domain.GenerationEvents},
		{"long-form webhook type", prop("LongVideoWebhookPayload", "type")["enum"], domain.LongVideoEvents},
		{"webhook attempt error", prop("WebhookAttempt", "error")["enum"], domain.WebhookErrorClasses},
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
	for _, l := range longform.Languages {
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
