package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
)

// TestStoryRegenerateWaitsAndDownloadsTheNewRevision: `story regenerate
// --wait` re-renders one scene of a completed video and downloads the new
// revision, in which only that scene's span changed; `story status` shows
// the revision; a regenerate that fails exits non-zero and leaves the
// video at its revision; --scene is required.
func TestStoryRegenerateWaitsAndDownloadsTheNewRevision(t *testing.T) {
	clientEnv(t)
	dir := t.TempDir()
	code, stdout, stderr := mediagen(t, "story", "create", "--prompt", "A day at the seaside", "--no-narration",
		"--scene", "waves rolling onto the sand", "--scene", "gulls over the pier", "--wait", "--out", dir)
	if code != 0 {
		t.Fatalf("create: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	id := regexp.MustCompile(`^video ([0-9a-f-]{36}):`).FindStringSubmatch(stdout)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if id == nil || len(lines) != 2 {
		t.Fatalf("create printed %q, want the video's line and its file", stdout)
	}
	first := strings.TrimSuffix(lines[1], " (10.0 s)")

	if code, _, stderr := mediagen(t, "story", "regenerate", id[1]); code != exitUsage || !strings.Contains(stderr, "--scene") {
		t.Errorf("regenerate without --scene: exit %d, stderr %q; want %d naming --scene", code, stderr, exitUsage)
	}
	out := t.TempDir()
	code, stdout, stderr = mediagen(t, "story", "regenerate", id[1], "--scene", "2", "--prompt", "a red kite over the dunes", "--wait", "--out", out)
	if code != 0 {
		t.Fatalf("regenerate: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	lines = strings.Split(strings.TrimSpace(stdout), "\n")
	want := "video " + id[1] + ": scene 2 regenerating to revision 2; final_video_url serves revision 1 meanwhile"
	if len(lines) != 2 || lines[0] != want || !strings.HasSuffix(lines[1], ".mp4 (10.0 s)") || !strings.HasPrefix(lines[1], out) {
		t.Fatalf("regenerate printed %q, want %q and the new video under %s", stdout, want, out)
	}
	if !strings.Contains(stderr, "scene 2 regenerated: revision 2") {
		t.Errorf("stderr %q, want the final progress line", stderr)
	}
	second := strings.TrimSuffix(lines[1], " (10.0 s)")
	ff := ffmpeg.Runner{}
	for n, changed := range map[int]bool{1: false, 2: true} {
		at := float64(n-1)*5 + 2.5
		was, err := ff.PixelAt(context.Background(), first, at, 10, 10)
		if err != nil {
			t.Fatal(err)
		}
		is, err := ff.PixelAt(context.Background(), second, at, 10, 10)
		if err != nil {
			t.Fatal(err)
		}
		if (was != is) != changed {
			t.Errorf("scene %d's frame was %v, is %v in the new revision; want it changed: %v", n, was, is, changed)
		}
	}
	if code, stdout, _ := mediagen(t, "story", "status", id[1]); code != 0 || !regexp.MustCompile(`(?m)^revision\s+2$`).MatchString(stdout) {
		t.Errorf("status: exit %d, %q; want revision 2", code, stdout)
	}

	// A regenerate that fails: exit non-zero, the video stays at 2.
	code, _, stderr = mediagen(t, "story", "regenerate", id[1], "--scene", "1", "--prompt", "waves [simulate:fail]", "--wait", "--out", out)
	if code != exitError || !strings.Contains(stderr, "stays at revision 2") {
		t.Errorf("a failing regenerate: exit %d, stderr %q; want %d saying the video stays at revision 2", code, stderr, exitError)
	}
}
