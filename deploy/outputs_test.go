package deploy

import (
	"slices"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/media"
)

// TestOutputsExpireAfterTheRetention: the bucket's lifecycle rules expire
// each record prefix after the default retention, the one the records'
// output_expires_at counts (domain.DefaultRetentionDays), and the bucket
// holds nothing outside those prefixes that a rule would miss.
func TestOutputsExpireAfterTheRetention(t *testing.T) {
	props := resource(t, "OutputBucket", "AWS::S3::Bucket").Properties
	lc, _ := props["LifecycleConfiguration"].(map[string]any)
	rules, _ := lc["Rules"].([]any)
	expires := map[string]int{}
	for _, r := range rules {
		rm, _ := r.(map[string]any)
		if rm["Status"] != "Enabled" {
			continue
		}
		if days, ok := number(rm["ExpirationInDays"]); ok {
			prefix, _ := rm["Prefix"].(string)
			if _, tagged := rm["TagFilters"]; !tagged {
				expires[prefix] = days
			}
		}
	}
	for _, prefix := range media.ExpiringPrefixes {
		if days, ok := expires[prefix]; !ok || days != domain.DefaultRetentionDays {
			t.Errorf("OutputBucket: no enabled rule expiring %s after %d days (rules: %s)", prefix, domain.DefaultRetentionDays, show(rules))
		}
	}
	for _, key := range append(objectKeys, media.GenerationPrefix("x"), media.LongVideoPrefix("x")) {
		if !slices.ContainsFunc(media.ExpiringPrefixes, func(p string) bool { return strings.HasPrefix(key, p) }) {
			t.Errorf("the object %s is under no expiring prefix", key)
		}
	}
}

// TestOnlyTheDeleteRoutesDeleteObjects: every S3 action granted is one
// the function's code makes (usesOf), so s3:DeleteObject belongs to the
// two delete-output functions alone; and their listing is confined by a
// condition to their record kind's prefix.
func TestOnlyTheDeleteRoutesDeleteObjects(t *testing.T) {
	deleters := map[string]string{"GenerationOutputDeleteFunction": "generations/*", "LongStoryOutputDeleteFunction": "long-videos/*"}
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
				if glob(a, "s3:DeleteObject", true) && deleters[p.name] == "" {
					t.Errorf("%s: grants s3:DeleteObject; only the delete-output functions delete objects", g.where)
				}
			}
		}
	}
	for fn, prefix := range deleters {
		policies, _ := resource(t, fn, "AWS::Serverless::Function").Properties["Policies"].([]any)
		found := false
		walk(policies, fn, func(path string, m map[string]any) {
			if m["Action"] != "s3:ListBucket" {
				return
			}
			found = true
			cond, _ := m["Condition"].(map[string]any)
			like, _ := cond["StringLike"].(map[string]any)
			if like["s3:prefix"] != prefix || len(cond) != 1 || len(like) != 1 {
				t.Errorf("%s: s3:ListBucket's Condition is %s, want StringLike s3:prefix %s only", path, show(cond), prefix)
			}
		})
		if !found {
			t.Errorf("%s: no s3:ListBucket statement", fn)
		}
	}
}
