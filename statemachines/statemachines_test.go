package statemachines_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
	"github.com/mediagen-dev/mediagen/statemachines"
)

// TestDefinitionPassesASLValidator checks the definition with asl-validator
// (npm), with its placeholders in place as the template deploys it.
func TestDefinitionPassesASLValidator(t *testing.T) {
	bin, err := testsupport.NodeTool("asl-validator")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--json-path", "long-story.asl.json").CombinedOutput()
	if err != nil {
		t.Fatalf("asl-validator refused long-story.asl.json: %v\n%s", err, out)
	}
	t.Logf("asl-validator: %s", strings.TrimSpace(string(out)))
}

// TestEveryPlaceholderIsATask keeps LongStoryTasks and the file in step.
func TestEveryPlaceholderIsATask(t *testing.T) {
	raw, err := os.ReadFile("long-story.asl.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != string(statemachines.LongStory) {
		t.Fatal("the embedded definition differs from the file")
	}
	found := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`).FindAllStringSubmatch(string(raw), -1) {
		found[m[1]] = true
	}
	for name := range found {
		if !slices.Contains(statemachines.LongStoryTasks, name) {
			t.Errorf("placeholder ${%s} is not in LongStoryTasks", name)
		}
	}
	for _, name := range statemachines.LongStoryTasks {
		if !found[name] {
			t.Errorf("LongStoryTasks names %s, which the definition does not use", name)
		}
	}
}

// TestEverySceneRunsAtOnce: the scene Map runs all scenes of the longest
// video at once, so a video takes about one scene's time, not several.
func TestEverySceneRunsAtOnce(t *testing.T) {
	var def struct {
		States map[string]struct {
			Branches []struct {
				States map[string]struct {
					Type           string
					MaxConcurrency int
				}
			}
		}
	}
	if err := json.Unmarshal(statemachines.LongStory, &def); err != nil {
		t.Fatal(err)
	}
	maps := 0
	for _, st := range def.States {
		for _, b := range st.Branches {
			for name, s := range b.States {
				if s.Type != "Map" {
					continue
				}
				maps++
				if s.MaxConcurrency != 0 && s.MaxConcurrency < longform.MaxScenes {
					t.Errorf("Map %s runs %d scenes at once, fewer than the %d a video may have", name, s.MaxConcurrency, longform.MaxScenes)
				}
			}
		}
	}
	if maps != 1 {
		t.Errorf("found %d scene Maps, want 1", maps)
	}
}
