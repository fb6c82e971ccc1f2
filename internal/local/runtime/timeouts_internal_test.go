package runtime

import (
	"net/http"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/deploy"
	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
	"github.com/mediagen-dev/mediagen/statemachines"
)

// The workflow's tasks run under their functions' own timeouts, as
// template.yaml (the file deployed) sets them: each task of the definition
// has one, its function's Timeout.
func TestTheWorkflowsTasksRunUnderTheTemplatesTimeouts(t *testing.T) {
	tpl, err := deploy.Load("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]string{}
	for _, name := range statemachines.LongStoryTasks {
		subs[name] = "arn:test:" + name
	}
	got, err := taskTimeouts(subs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(statemachines.LongStoryTasks) {
		t.Errorf("%d task timeouts, want one for each of %v", len(got), statemachines.LongStoryTasks)
	}
	for name, arn := range subs {
		fn := name[:len(name)-len("Arn")]
		if _, own := tpl.Resources[fn].Declared["Timeout"]; !own {
			t.Errorf("%s sets no Timeout of its own: a workflow task's should be explicit", fn)
		}
		want, err := tpl.FunctionTimeout(fn)
		if err != nil {
			t.Fatal(err)
		}
		if got[arn] != want {
			t.Errorf("%s runs under %s locally; template.yaml gives %s %s", name, got[arn], fn, want)
		}
	}
}

// The local queues run the poller and the webhooks with the RecursiveLoop
// setting template.yaml gives their functions.
func TestTheLocalQueuesApplyTheTemplatesRecursiveLoop(t *testing.T) {
	tpl, err := deploy.Load("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	local := map[string]string{"PollerFunction": pollerRecursiveLoop, "WebhooksFunction": webhooksRecursiveLoop}
	for id, setting := range local {
		if got, _ := tpl.Resources[id].Properties["RecursiveLoop"].(string); got != setting {
			t.Errorf("the local runtime's queue runs %s with RecursiveLoop %q, template.yaml says %q", id, setting, got)
		}
	}
}

// SubmitScene creates a scene's job through the upstream client: locally
// as deployed, the client's worst case (every try timed out, the longest
// waits between) ends well inside the function's Timeout, so a slow create
// ends as the call's error, never as the function killed mid-create.
func TestSubmitScenesUpstreamCallEndsWellInsideItsFunction(t *testing.T) {
	tpl, err := deploy.Load("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fn, err := tpl.FunctionTimeout("SubmitSceneFunction")
	if err != nil {
		t.Fatal(err)
	}
	cfg := withDefaults(Config{})
	worst := upstream.Tuning{HTTP: &http.Client{Timeout: cfg.UpstreamTimeout}}.WorstCase()
	if worst+20*time.Second > fn {
		t.Errorf("the local upstream client's worst case is %s, not well inside SubmitSceneFunction's Timeout %s", worst, fn)
	}
	if cfg.UpstreamTimeout != lambdawiring.UpstreamTuning.HTTP.Timeout {
		t.Errorf("the local upstream client waits %s a try, the deployed functions' %s", cfg.UpstreamTimeout, lambdawiring.UpstreamTuning.HTTP.Timeout)
	}
}
