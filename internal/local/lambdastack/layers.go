package lambdastack

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// layerPaths points the environment's paths under /opt (where Lambda
// extracts a function's layers) at the stack's stand-in of the layer: a
// directory under the run's Dir where each program the environment names
// (/opt/bin/ffmpeg) is this machine's program of the same name, and the
// fonts directory (/opt/fonts) holds the machine's files of the caption
// fonts (longform.CaptionFonts, from Debian's font directories). The
// template's one layer is a static ffmpeg and ffprobe and the captions'
// fonts; the machine's own are their stand-in.
func (s *Stack) layerPaths(env map[string]string) error {
	opt := filepath.Join(s.cfg.Dir, "opt")
	for k, v := range env {
		rest, ok := strings.CutPrefix(v, "/opt/")
		if !ok {
			continue
		}
		local := filepath.Join(opt, rest)
		if _, err := os.Lstat(local); err != nil {
			program, err := s.layerStandIn(rest)
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
// path under /opt): for the fonts directory, a directory of links to the
// machine's caption fonts.
func (s *Stack) layerStandIn(rest string) (string, error) {
	if rest == "fonts" {
		dir := filepath.Join(s.cfg.Dir, "layer-fonts")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		for _, f := range longform.CaptionFonts {
			var found bool
			for _, d := range longform.DefaultCaptionFontDirs {
				if _, err := os.Stat(filepath.Join(d, f.File)); err == nil {
					if err := os.Symlink(filepath.Join(d, f.File), filepath.Join(dir, f.File)); err != nil && !errors.Is(err, os.ErrExist) {
						return "", err
					}
					found = true
					break
				}
			}
			if !found {
				return "", fmt.Errorf("no %s (%s) in %v: scripts/install-deps.sh installs it", f.File, f.Family, longform.DefaultCaptionFontDirs)
			}
		}
		return dir, nil
	}
	return exec.LookPath(filepath.Base(rest))
}
