package deploy

import (
	"testing"

	"github.com/mediagen-dev/mediagen/internal/local/costs"
)

// TestTheCostMeterKnowsEachFunctionsMemory: the local runtime prices Lambda
// time at each function's memory size (costs.MemoryMB), which must be the
// template's.
func TestTheCostMeterKnowsEachFunctionsMemory(t *testing.T) {
	for _, f := range functions {
		mem, ok := number(resource(t, f.ID, "AWS::Serverless::Function").Properties["MemorySize"])
		if !ok {
			t.Errorf("%s: MemorySize is not a number", f.ID)
			continue
		}
		if got := costs.MemoryMB(f.Folder); got != mem {
			t.Errorf("costs.MemoryMB(%q) is %d MB; template.yaml gives %s %d MB", f.Folder, got, f.ID, mem)
		}
	}
}
