package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileSchema compiles a variant's InputSchema, as a client would after
// reading it from GET /api/models: from its JSON text.
func compileSchema(t *testing.T, v Variant) *jsonschema.Schema {
	t.Helper()
	raw, err := json.Marshal(v.InputSchema())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	loc := "https://mediagen.example/schemas/" + v.Version + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		t.Fatalf("%s: the input schema does not compile: %v\n%s", v.Version, err, raw)
	}
	return s
}

// schemaCase is one input, as JSON text so that numbers keep their literal.
type schemaCase struct {
	name  string
	input string
}

// sampleValue is a valid value of a field.
func sampleValue(f Field) any {
	switch f.Type {
	case TypeBoolean:
		return true
	case TypeEnum:
		return f.Enum[0]
	case TypeImage:
		return "https://cdn.example.com/ref.png"
	case TypeImageList:
		return []any{"https://cdn.example.com/ref.png"}
	default:
		return strings.Repeat("a", max(f.MinLen, 5))
	}
}

// casesOf derives valid and invalid inputs of a variant from its fields:
// the minimal input, each field set to each kind of value, and the usual
// mistakes (missing, unknown, wrong type, out of range).
func casesOf(t *testing.T, v Variant) []schemaCase {
	t.Helper()
	minimal := map[string]any{}
	for _, f := range v.Fields {
		if f.Required {
			minimal[f.Name] = sampleValue(f)
		}
	}
	with := func(name string, value any) string {
		m := map[string]any{}
		for k, x := range minimal {
			m[k] = x
		}
		if value == nil {
			delete(m, name)
		} else {
			m[name] = value
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	raw := func(name, literal string) string { // a field with a literal value
		s := with(name, nil)
		if s == "{}" {
			return fmt.Sprintf(`{%q:%s}`, name, literal)
		}
		return fmt.Sprintf(`{%q:%s,%s`, name, literal, s[1:])
	}
	cases := []schemaCase{
		{"minimal", with("", nil)},
		{"unknown field", with("foo", "bar")},
		{"empty object", `{}`},
	}
	for _, f := range v.Fields {
		add := func(what, input string) { cases = append(cases, schemaCase{f.Name + " " + what, input}) }
		if f.Required {
			add("missing", with(f.Name, nil))
		}
		add("null", raw(f.Name, "null"))
		add("object", raw(f.Name, "{}"))
		switch f.Type {
		case TypeBoolean:
			add("true", with(f.Name, true))
			add("false", with(f.Name, false))
			add("as string", with(f.Name, "true"))
			add("as number", raw(f.Name, "1"))
		case TypeEnum:
			for _, e := range f.Enum {
				add(e, with(f.Name, e))
				if strings.Trim(e, "0123456789") == "" {
					add(e+" as number", raw(f.Name, e))
					add(e+" as string with a fraction", with(f.Name, e+".0"))
				}
			}
			add("not in the set", with(f.Name, "nope"))
			add("other case", with(f.Name, strings.ToUpper(f.Enum[0])+"X"))
			add("as boolean", raw(f.Name, "true"))
			add("as list", with(f.Name, []any{f.Enum[0]}))
		case typeString:
			add("text", with(f.Name, "a fox in the snow"))
			add("as number", raw(f.Name, "42"))
			add("blank", with(f.Name, " \t "))
			add("empty", with(f.Name, ""))
			if f.MinLen > 0 {
				add("at the minimum", with(f.Name, strings.Repeat("é", f.MinLen)))
				add("below the minimum", with(f.Name, strings.Repeat("é", f.MinLen-1)))
			}
			if f.MaxLen > 0 {
				add("at the maximum", with(f.Name, strings.Repeat("é", f.MaxLen)))
				add("over the maximum", with(f.Name, strings.Repeat("é", f.MaxLen+1)))
			}
		case TypeImage:
			add("https URL", with(f.Name, "https://cdn.example.com/a.png"))
			add("HTTPS URL", with(f.Name, "HTTPS://cdn.example.com/a.png"))
			add("data URI", with(f.Name, pngDataURI))
			add("as number", raw(f.Name, "3"))
			add("as list", with(f.Name, []any{"https://cdn.example.com/a.png"}))
			add("javascript URL", with(f.Name, "javascript:alert(1)"))
			add("file URL", with(f.Name, fileURL))
			add("file URL of no file id", with(f.Name, "mediagen://files/a.png"))
			add("file URL of a version 4 id", with(f.Name, "mediagen://files/3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7"))
			add("relative URL", with(f.Name, "/a.png"))
			add("empty", with(f.Name, ""))
		case TypeImageList:
			limit := f.MaxItems
			if limit == 0 {
				limit = defaultMaxImages
			}
			list := func(n int) []any {
				out := make([]any, n)
				for i := range out {
					out[i] = "https://cdn.example.com/a.png"
				}
				return out
			}
			add("one", with(f.Name, list(1)))
			add("at the limit", with(f.Name, list(limit)))
			add("over the limit", with(f.Name, list(limit+1)))
			add("empty", with(f.Name, []any{}))
			add("data URI item", with(f.Name, []any{pngDataURI}))
			add("file URL item", with(f.Name, []any{fileURL, "https://cdn.example.com/a.png"}))
			add("file URL item in capitals", with(f.Name, []any{strings.ToUpper(fileURL)}))
			add("number item", with(f.Name, []any{3}))
			add("not a list", with(f.Name, "https://cdn.example.com/a.png"))
			add("relative item", with(f.Name, []any{"/a.png"}))
		}
	}
	return cases
}

func TestInputSchemaAgreesWithTheValidator(t *testing.T) {
	for _, v := range All() {
		t.Run(v.Version, func(t *testing.T) {
			schema := compileSchema(t, v)
			cases := casesOf(t, v)
			for _, s := range specSamples {
				if s.version == v.Version {
					b, _ := json.Marshal(s.input)
					cases = append(cases, schemaCase{"spec sample", string(b)})
				}
			}
			accepted, rejected := 0, 0
			for _, c := range cases {
				body := fmt.Sprintf(`{"model":%q,"model_version":%q,"input":%s}`, v.Model, v.Version, c.input)
				_, parseErr := ParseGenerate([]byte(body), Options{})
				doc, err := jsonschema.UnmarshalJSON(strings.NewReader(c.input))
				if err != nil {
					t.Fatal(err)
				}
				schemaErr := schema.Validate(doc)
				switch {
				case parseErr == nil && schemaErr != nil:
					t.Errorf("%s: the validator accepts %.200s but the schema refuses it: %v", c.name, c.input, schemaErr)
				case parseErr != nil && schemaErr == nil:
					t.Errorf("%s: the schema accepts %.200s but the validator refuses it: %v", c.name, c.input, parseErr)
				case parseErr == nil:
					accepted++
				default:
					rejected++
				}
			}
			if accepted == 0 || rejected == 0 {
				t.Errorf("%d inputs accepted and %d refused; the cases should have both", accepted, rejected)
			}
		})
	}
}

// Where the validator must stay stricter than any JSON Schema: the schema
// lets these through, InputSchema says so, and the validator refuses them.
func TestInputSchemaLeavesDeeperChecksToTheValidator(t *testing.T) {
	tests := []struct{ name, version, model, input string }{
		{"private host", "gamma-v2.1", "provider-c", `{"prompt":"p","start_image":"https://10.0.0.1/a.png"}`},
		{"data URI that is no image", "gamma-v2.1", "provider-c", `{"prompt":"p","start_image":"data:image/png;base64,aGVsbG8="}`},
		{"number with a fraction for an enum", "alpha-3.1-fast", "provider-a", `{"prompt":"p","duration":4.0}`},
		{"duration and n_frames disagree", "beta-2-enchanted", "provider-b", `{"prompt":"p","duration":"10","n_frames":"15"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Lookup(tt.model, tt.version)
			if err != nil {
				t.Fatal(err)
			}
			doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(tt.input))
			if err := compileSchema(t, v).Validate(doc); err != nil {
				t.Errorf("the schema refuses %s (%v); if it can check this now, move the case to the agreement test", tt.input, err)
			}
			body := fmt.Sprintf(`{"model":%q,"model_version":%q,"input":%s}`, tt.model, tt.version, tt.input)
			if _, err := ParseGenerate([]byte(body), Options{}); err == nil {
				t.Errorf("the validator accepts %s", tt.input)
			}
		})
	}
}

func TestInputSchemaDescribesEveryField(t *testing.T) {
	for _, v := range All() {
		s := v.InputSchema()
		props := s["properties"].(map[string]any)
		if len(props) != len(v.Fields) || s["additionalProperties"] != false || s["$schema"] != schemaDialect {
			t.Errorf("%s: %d properties for %d fields, additionalProperties %v", v.Version, len(props), len(v.Fields), s["additionalProperties"])
		}
		for _, f := range v.Fields {
			p := props[f.Name].(map[string]any)
			if p["description"] == "" || p["description"] == nil {
				t.Errorf("%s.%s has no description", v.Version, f.Name)
			}
			if f.Default != "" && p["default"] == nil {
				t.Errorf("%s.%s: default %q is not in the schema", v.Version, f.Name, f.Default)
			}
		}
	}
}
