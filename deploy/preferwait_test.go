package deploy

import (
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/local/apigw"
)

// Prefer: wait holds the generate function open: its wait cap, with room
// to create the job before and to answer after, must end within the
// function's Timeout, and that Timeout within API Gateway's 30 s
// integration timeout, or the client gets the gateway's 503 instead of
// the processing record.
func TestGenerateFunctionOutlastsThePreferWaitCap(t *testing.T) {
	const room = 3 * time.Second // the create before, the last read and the answer after
	timeout, err := tmpl(t).FunctionTimeout("GenerateFunction")
	if err != nil {
		t.Fatal(err)
	}
	if generation.WaitCap+room > timeout {
		t.Errorf("GenerateFunction's Timeout %s leaves less than %s after Prefer: wait's cap %s", timeout, room, generation.WaitCap)
	}
	if timeout >= apigw.IntegrationTimeout {
		t.Errorf("GenerateFunction's Timeout %s is not under API Gateway's integration timeout %s", timeout, apigw.IntegrationTimeout)
	}
}
