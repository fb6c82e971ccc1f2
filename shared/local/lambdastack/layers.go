package lambdastack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// layerPaths points the environment's paths under /opt (where Lambda
// extracts a function's layers) at the stack's stand-in of the layer: a
// directory under the run's Dir where each program the environment names
// (/opt/bin/ffmpeg) is this machine's program of the same name. The
// template's one layer is a static ffmpeg and ffprobe; the machine's own
// are its stand-in.
func (s *Stack) layerPaths(env map[string]string) error {
	opt := filepath.Join(s.cfg.Dir, "opt")
	for k, v := range env {
		rest, ok := strings.CutPrefix(v, "/opt/")
		if !ok {
			continue
		}
		local := filepath.Join(opt, rest)
		if _, err := os.Lstat(local); err != nil {
			program, err := exec.LookPath(filepath.Base(rest))
			if err != nil {
				return fmt.Errorf("%s=%s: the layer's program is not on this machine: %w", k, v, err)
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
