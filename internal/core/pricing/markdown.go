package pricing

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// MarkdownTable renders the price of every variant for docs/api.md: the
// conversion to credits, then one row per variant with its rule in words and
// the credits of typical requests.
func markdownTable(t *Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Base prices are in USD; credits = base USD × (1 + %s %% margin) × %s credits per USD, rounded up to 0.01 credit. "+
		"Options not named in a row are at their defaults.\n\n",
		t.marginPercent.String(), t.creditsPerUSD.String())
	b.WriteString("| model | model_version | kind | price rule (base USD) | credits per request | defaults |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, v := range catalog.All() {
		rl := t.rules[v.Version]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", v.Model, v.Version, v.Kind,
			strings.Join(ruleInWords(v, rl), "<br>"), strings.Join(examples(t, v, rl), "<br>"), defaultsInWords(v))
	}
	return b.String()
}

func ruleInWords(v catalog.Variant, rl rule) []string {
	unit := "per video"
	switch {
	case rl.basis == PerSecond:
		unit = "per second"
	case v.Kind == domain.MediaImage:
		unit = "per image"
	case v.FixedDurationSeconds > 0:
		unit = fmt.Sprintf("per video (%d s)", v.FixedDurationSeconds)
	}
	var lines []string
	for _, c := range rl.cases {
		lines = append(lines, fmt.Sprintf("%s %s if %s", usd(c.usd), unit, conditionInWords(v, c.when)))
	}
	switch {
	case len(lines) == 0:
		return []string{usd(rl.usd) + " " + unit}
	case casesCoverEverything(v, rl):
		return lines // "otherwise" never applies
	}
	return append(lines, "otherwise "+usd(rl.usd)+" "+unit)
}

// casesCoverEverything reports whether every combination of the values of
// the fields the cases test is matched by some case.
func casesCoverEverything(v catalog.Variant, rl rule) bool {
	var names []string
	for _, c := range rl.cases {
		for name := range c.when {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	combos := []map[string]any{{}}
	for _, name := range names {
		f, _ := v.Field(name)
		values := []any{true, false}
		if f.Type == catalog.TypeEnum {
			values = nil
			for _, e := range f.Enum {
				values = append(values, e)
			}
		}
		var next []map[string]any
		for _, combo := range combos {
			for _, val := range values {
				m := maps.Clone(combo)
				m[name] = val
				next = append(next, m)
			}
		}
		combos = next
	}
	for _, combo := range combos {
		if !slices.ContainsFunc(rl.cases, func(c priceCase) bool { return c.matches(combo) }) {
			return false
		}
	}
	return true
}

// examples prices a request at each duration (videos) or one image, then
// at each case's options, skipping requests already shown.
func examples(t *Table, v catalog.Variant, rl rule) []string {
	var lines, seen []string
	add := func(input map[string]any, label string) {
		q, err := t.QuoteFor(v, input, 1)
		if err != nil || slices.Contains(seen, label) {
			return
		}
		seen = append(seen, label)
		lines = append(lines, fmt.Sprintf("%s: %s", label, domain.FormatCredits(q.Credits)))
	}
	durationField, hasDuration := v.DurationField()
	base := func() map[string]any {
		in := map[string]any{}
		if hasDuration && durationField.Default == "" {
			in[durationField.Name] = durationField.Enum[0] // a required length
		}
		return in
	}
	label := func(input map[string]any) string {
		parts := []string{"1 image"}
		if v.Kind == domain.MediaVideo {
			parts = []string{fmt.Sprintf("%d s", v.DurationSeconds(v.Resolve(input)))}
		}
		defaults := v.Resolve(nil)
		for _, f := range v.Fields {
			if val, ok := input[f.Name]; ok && f.Name != durationField.Name && valueString(val) != valueString(defaults[f.Name]) {
				parts = append(parts, f.Name+"="+valueString(val))
			}
		}
		return strings.Join(parts, ", ")
	}
	if hasDuration {
		for _, d := range v.Durations() {
			in := base()
			in[durationField.Name] = strconv.Itoa(d)
			add(in, label(in))
		}
	} else {
		add(base(), label(base()))
	}
	for _, c := range rl.cases {
		in := base()
		for k, val := range c.when {
			if f, _ := v.Field(k); f.Type == catalog.TypeBoolean {
				in[k] = val == "true"
			} else {
				in[k] = val
			}
		}
		add(in, label(in))
	}
	if v.Kind == domain.MediaImage {
		lines = append(lines, "× image count")
	}
	return lines
}

func conditionInWords(v catalog.Variant, when map[string]string) string {
	var parts []string
	for _, f := range v.Fields { // field order, so the text is stable
		if val, ok := when[f.Name]; ok {
			parts = append(parts, f.Name+"="+val)
		}
	}
	return strings.Join(parts, ", ")
}

func defaultsInWords(v catalog.Variant) string {
	var parts []string
	for _, f := range v.Fields {
		if f.Default != "" {
			parts = append(parts, f.Name+"="+f.Default)
		}
	}
	if v.FixedDurationSeconds > 0 {
		parts = append(parts, fmt.Sprintf("length %d s (fixed)", v.FixedDurationSeconds))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ")
}

func usd(d decimal.Decimal) string {
	places := max(2, -d.Exponent())
	return "USD " + d.StringFixed(places)
}
