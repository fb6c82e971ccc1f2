package routing

import (
	"os"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// TestTheDocsRoutingExampleIsAValidRoutingFile parses the example of
// docs/routing.md as serve would: it must be accepted, and route an image
// and a video variant to Replicate and a variant to a fal app.
func TestTheDocsRoutingExampleIsAValidRoutingFile(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/routing.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## An example routing file\n")
	if !ok {
		t.Fatal(`docs/routing.md has no "## An example routing file" section`)
	}
	_, block, ok := strings.Cut(section, "```json\n")
	if !ok {
		t.Fatal("the example section of docs/routing.md has no ```json block")
	}
	block, _, _ = strings.Cut(block, "```")
	c, err := parse([]byte(block))
	if err != nil {
		t.Fatalf("the routing example of docs/routing.md is refused: %v", err)
	}
	var replicateImage, replicateVideo, fal, failover bool
	for _, v := range catalog.All() {
		routes := c.Routes(v.Model, v.Version)
		failover = failover || len(routes) > 1
		for _, r := range routes {
			switch c.Upstreams[r.Upstream].Protocol {
			case ProtocolReplicate:
				replicateImage = replicateImage || v.Kind == domain.MediaImage
				replicateVideo = replicateVideo || v.Kind == domain.MediaVideo
			case ProtocolFal:
				fal = true
			}
		}
	}
	if !replicateImage || !replicateVideo || !fal || !failover {
		t.Errorf("the example routes an image to Replicate %v, a video to Replicate %v, something to fal %v, a variant over two routes %v; want all",
			replicateImage, replicateVideo, fal, failover)
	}
	if c.UsesBuiltin() {
		t.Error("the example names the built-in simulator; it is meant for real providers")
	}
}
