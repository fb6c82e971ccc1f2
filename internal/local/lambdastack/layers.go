package lambdastack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
)

// layerPaths points the environment's paths under /opt (where Lambda
// extracts a function's layers) at the stack's stand-in of the layer: a
// directory under the run's Dir where each program the environment names
// (/opt/bin/ffmpeg) is this machine's program of the same name, and each
// font (/opt/fonts/DejaVuSans.ttf) the machine's font file of the same
// name beside ffmpeg.DefaultFontFile. The template's one layer is a static
// ffmpeg and ffprobe and the captions' font; the machine's own are their
// stand-in.
func (s *Stack) layerPaths(env map[string]string) error {
	opt := filepath.Join(s.cfg.Dir, "opt")
	for k, v := range env {
		rest, ok := strings.CutPrefix(v, "/opt/")
		if !ok {
			continue
		}
		local := filepath.Join(opt, rest)
		if _, err := os.Lstat(local); err != nil {
			program, err := layerStandIn(rest)
			if err != nil {
				return fmt.Errorf("%s=%s: the layer's file is not on this machine: %w", k, v, err)
			}
			if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(program, local); err != nil {
				return err
			}
		}
		env[k] = local
	}
	return nil
}

// layerStandIn is this machine's file for the layer's file at rest (the
// path under /opt).
func layerStandIn(rest string) (string, error) {
	if name, ok := strings.CutPrefix(rest, "fonts/"); ok {
		font := filepath.Join(filepath.Dir(ffmpeg.DefaultFontFile), filepath.Base(name))
		if _, err := os.Stat(font); err != nil {
			return "", err
		}
		return font, nil
	}
	return exec.LookPath(filepath.Base(rest))
}
