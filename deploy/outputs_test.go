package deploy

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// TestOutputsExpireAfterTheRetention: the bucket's lifecycle rules expire
// each record prefix after the default retention, the one the records'
// output_expires_at counts (domain.DefaultRetentionDays), the inputs kept
// in the bucket after media.InputRetentionDays, and the bucket holds
// nothing outside those prefixes that a rule would miss.
func TestOutputsExpireAfterTheRetention(t *testing.T) {
	props := resource(t, "OutputBucket", "AWS::S3::Bucket").Properties
	lc, _ := props["LifecycleConfiguration"].(map[string]any)
	rules, _ := lc["Rules"].([]any)
	expires := map[string]int{} // by prefix, untagged rules
	tagged := map[string]int{}  // by retention tag value, rules without a prefix
	for _, r := range rules {
		rm, _ := r.(map[string]any)
		days, ok := number(rm["ExpirationInDays"])
		if rm["Status"] != "Enabled" || !ok {
			continue
		}
		prefix, _ := rm["Prefix"].(string)
		filters, _ := rm["TagFilters"].([]any)
		switch {
		case len(filters) == 0:
			expires[prefix] = days
		case len(filters) == 1 && prefix == "":
			f, _ := filters[0].(map[string]any)
			if f["Key"] == domain.RetentionTag {
				v, _ := f["Value"].(string)
				tagged[v] = days
			}
		default:
			t.Errorf("OutputBucket: a lifecycle rule %s neither expires a prefix nor one retention tag", show(rm))
		}
	}
	// An account's retention other than the default is a tag rule of its
	// own, and none is longer than the default, whose prefix rules cover
	// every object (S3 applies the shortest matching rule).
	for _, days := range domain.RetentionChoices {
		if days > domain.DefaultRetentionDays {
			t.Errorf("retention %d days is longer than the default's prefix rule, which would cut it short", days)
		}
		if days == domain.DefaultRetentionDays {
			continue
		}
		if got, ok := tagged[strconv.Itoa(days)]; !ok || got != days {
			t.Errorf("OutputBucket: no enabled rule expiring objects tagged %s=%d after %d days", domain.RetentionTag, days, days)
		}
	}
	if len(tagged) != len(domain.RetentionChoices)-1 {
		t.Errorf("OutputBucket: tag rules %v, want one per retention choice but the default %v", tagged, domain.RetentionChoices)
	}
	for _, prefix := range media.ExpiringPrefixes {
		if days, ok := expires[prefix]; !ok || days != domain.DefaultRetentionDays {
			t.Errorf("OutputBucket: no enabled rule expiring %s after %d days (rules: %s)", prefix, domain.DefaultRetentionDays, show(rules))
		}
	}
	// The inputs kept in the bucket expire too, after their own days.
	if days, ok := expires[media.InputsPrefix]; !ok || days != media.InputRetentionDays {
		t.Errorf("OutputBucket: no enabled rule expiring %s after %d days (rules: %s)", media.InputsPrefix, media.InputRetentionDays, show(rules))
	}
	// The uploaded files too, after theirs.
	if days, ok := expires[media.UploadsPrefix]; !ok || days != media.UploadRetentionDays {
		t.Errorf("OutputBucket: no enabled rule expiring %s after %d days (rules: %s)", media.UploadsPrefix, media.UploadRetentionDays, show(rules))
	}
	prefixes := append([]string{media.InputsPrefix, media.UploadsPrefix}, media.ExpiringPrefixes...)
	for _, key := range append(objectKeys, media.GenerationPrefix("x"), media.LongVideoPrefix("x"), media.InputKey("x"), media.UploadKey("usr_x", "x"), media.SnapshotKey("x", "x")) {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(key, p) }) {
			t.Errorf("the object %s is under no expiring prefix", key)
		}
	}
}

// TestOnlyTheDeleteRoutesDeleteObjects: every S3 action granted is one
// the function's code makes (usesOf), so s3:DeleteObject belongs to the
// two delete-output functions, and to the steps that delete the outputs
// of work that did not end paid for (the poller, Assemble, MarkFailed)
// and to Finalize, which also deletes the files a regenerate replaced;
// and every listing (the delete routes', and the poller's and finalize's,
// which tag a shorter retention; generate's and long-form create's, which
// find uploaded files; Narrate's, which finds the tracks already spoken;
// the poller's and Assemble's, which find a work's copy of a file) is
// confined by a condition to its record kind's prefix.
func TestOnlyTheDeleteRoutesDeleteObjects(t *testing.T) {
	deleters := map[string]string{"GenerationOutputDeleteFunction": "generations/*", "LongStoryOutputDeleteFunction": "long-videos/*"}
	// Finalize too: a regenerate's replaces the previous revision's files.
	unpaid := map[string]bool{"PollerFunction": true, "AssembleFunction": true, "MarkFailedFunction": true, "FinalizeFunction": true}
	// Who lists the bucket, and the one prefix each may list.
	listers := map[string][]string{"PollerFunction": {"generations/*", "inputs/*"}, "AssembleFunction": {"inputs/*"}, "FinalizeFunction": {"long-videos/*"},
		"LongStoryVoicesFunction": {"voices/*"}, "NarrateFunction": {"long-videos/*/narration/*"}, "GenerateFunction": {"uploads/*"},
		"LongStoryCreateFunction": {"uploads/*"}}
	for fn, prefix := range deleters {
		listers[fn] = []string{prefix}
	}
	for _, p := range principals(t) {
		used := allUses(t)[p.name]
		for _, g := range p.grants {
			for _, a := range g.actions {
				if !strings.HasPrefix(strings.ToLower(a), "s3:") {
					continue
				}
				if !slices.ContainsFunc(used, func(u use) bool {
					return slices.ContainsFunc(u.actions, func(ua string) bool { return glob(a, ua, true) })
				}) {
					t.Errorf("%s: grants %s, which %s's code never calls", g.where, a, p.name)
				}
				if glob(a, "s3:DeleteObject", true) && deleters[p.name] == "" && !unpaid[p.name] {
					t.Errorf("%s: grants s3:DeleteObject; only the delete-output functions delete objects", g.where)
				}
			}
		}
	}
	for _, f := range functions {
		policies, _ := resource(t, f.ID, "AWS::Serverless::Function").Properties["Policies"].([]any)
		fn, prefixes := f.ID, listers[f.ID]
		found := false
		walk(policies, fn, func(path string, m map[string]any) {
			if m["Action"] != "s3:ListBucket" {
				return
			}
			found = true
			if len(prefixes) == 0 {
				t.Errorf("%s: lists the bucket; only %v do", path, slices.Collect(maps.Keys(listers)))
				return
			}
			cond, _ := m["Condition"].(map[string]any)
			like, _ := cond["StringLike"].(map[string]any)
			p, _ := like["s3:prefix"].(string)
			if !slices.Contains(prefixes, p) || len(cond) != 1 || len(like) != 1 {
				t.Errorf("%s: s3:ListBucket's Condition is %s, want StringLike s3:prefix one of %v only", path, show(cond), prefixes)
			}
		})
		if !found && len(prefixes) > 0 {
			t.Errorf("%s: no s3:ListBucket statement", fn)
		}
	}
}

// TestTheBucketsCORSRuleIsTheUploadsOnly: the output bucket's one CORS
// rule is media.UploadCORS (what the local store applies): a page may PUT
// to a presigned upload URL with its Content-Type, and nothing else.
func TestTheBucketsCORSRuleIsTheUploadsOnly(t *testing.T) {
	props := resource(t, "OutputBucket", "AWS::S3::Bucket").Properties
	cors, _ := props["CorsConfiguration"].(map[string]any)
	rules, _ := cors["CorsRules"].([]any)
	if len(rules) != 1 {
		t.Fatalf("OutputBucket: CORS rules %s, want one: the uploads' PUT", show(cors))
	}
	rule, _ := rules[0].(map[string]any)
	strs := func(v any) []string {
		var out []string
		list, _ := v.([]any)
		for _, x := range list {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	maxAge, _ := number(rule["MaxAge"])
	want := media.UploadCORS
	if !slices.Equal(strs(rule["AllowedOrigins"]), want.AllowedOrigins) || !slices.Equal(strs(rule["AllowedMethods"]), want.AllowedMethods) ||
		!slices.Equal(strs(rule["AllowedHeaders"]), want.AllowedHeaders) || maxAge != want.MaxAgeSeconds || len(rule) != 4 {
		t.Errorf("OutputBucket: CORS rule %s, want media.UploadCORS %+v", show(rule), want)
	}
}
