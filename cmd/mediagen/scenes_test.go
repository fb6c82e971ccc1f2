package main

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// A scene's own model and narration (--scene-model N=MODEL, --narration
// by position) reach the service as scenes[i].model and
// scenes[i].narration: story estimate prices each scene by its model, and
// story create sends the same scenes, whose record keeps them and whose
// hold is that price. By prices.json, beta-2 ($0.10/s) and delta-1-pro
// ($0.06/s) cost 13 and 7.8 credits a second (30 % margin, 100 credits a
// dollar): a 5 s scene of each is 65 + 39 = 104 credits.
func TestStorySceneModelAndNarrationArePricedAndSent(t *testing.T) {
	rt := clientEnv(t)
	scenes := []string{"--scene", "waves on the beach", "--scene", "gulls over the pier"}
	estimates := []struct {
		name  string
		flags []string
		want  string
	}{
		{"every scene by the video's model", nil, "beta-2: 2 scenes × 5 s = 10 s, 13 credits per second: 130 credits\n"},
		{"scene 2 by its own model", []string{"--scene-model", "2=delta-1-pro"},
			"beta-2 (scene 2: delta-1-pro): 2 scenes × 5 s = 10 s, 10.4 credits per second on average: 104 credits\n"},
		{"both by their own model", []string{"--scene-model", "2=delta-1-pro", "--scene-model", "1=delta-1-pro"},
			"beta-2 (scene 1: delta-1-pro, scene 2: delta-1-pro): 2 scenes × 5 s = 10 s, 7.8 credits per second on average: 78 credits\n"},
	}
	for _, tt := range estimates {
		t.Run("estimate/"+tt.name, func(t *testing.T) {
			code, stdout, stderr := mediagen(t, append(append([]string{"story", "estimate"}, scenes...), tt.flags...)...)
			if code != 0 || stdout != tt.want {
				t.Errorf("exit %d, stdout %q (want %q), stderr %q", code, stdout, tt.want, stderr)
			}
		})
	}

	code, stdout, stderr := mediagen(t, append(append([]string{"story", "create", "--prompt", "A day at the seaside"}, scenes...),
		"--scene-model", "2=delta-1-pro", "--narration", "", "--narration", "The gulls call over the pier.")...)
	m := regexp.MustCompile(`^video (\S+): .*2 scenes, about 10 seconds; 104\.00 credits are held`).FindStringSubmatch(stdout)
	if code != 0 || m == nil {
		t.Fatalf("story create: exit %d, stdout %q (want the estimate's 104.00 credits held), stderr %q", code, stdout, stderr)
	}
	v, err := rt.Store.GetLongVideo(context.Background(), m[1])
	if err != nil {
		t.Fatal(err)
	}
	want := []domain.Scene{{SceneNumber: 1, Prompt: "waves on the beach"},
		{SceneNumber: 2, Prompt: "gulls over the pier", Narration: "The gulls call over the pier.", Model: "delta-1-pro"}}
	if !slices.Equal(v.Scenes, want) || v.Model != "beta-2" {
		t.Errorf("the service received model %s, scenes %+v; want beta-2, scenes %+v", v.Model, v.Scenes, want)
	}
}

// A --scene-model that names no scene is the command line's error (exit
// 2, nothing sent); a model the service refuses for a scene is its 400,
// shown field by field as any other (exit 1), at the estimate as at the
// create.
func TestStorySceneModelRefusals(t *testing.T) {
	clientEnv(t)
	two := []string{"--scene", "waves on the beach", "--scene", "gulls over the pier"}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no such scene", append([]string{"story", "create", "--prompt", "p", "--scene-model", "3=delta-1-pro"}, two...), exitUsage,
			[]string{`--scene-model "3=delta-1-pro": there is no scene 3 (2 --scene flags)`}},
		{"no position", append([]string{"story", "estimate", "--scene-model", "delta-1-pro"}, two...), exitUsage,
			[]string{`--scene-model "delta-1-pro": want N=MODEL`}},
		{"a scene named twice", append([]string{"story", "estimate", "--scene-model", "1=delta-1-pro", "--scene-model", "1=beta-2"}, two...), exitUsage,
			[]string{"scene 1 already has model delta-1-pro"}},
		{"an image model", append([]string{"story", "estimate", "--scene-model", "2=zeta-pro"}, two...), exitError,
			[]string{"mediagen story estimate:", "scenes[1].model: must be a video model_version"}},
		{"no portrait clips, at the estimate", append([]string{"story", "estimate", "--portrait", "--scene-model", "1=video-01"}, two...), exitError,
			[]string{"scenes[0].model: model video-01 makes no portrait clips"}},
		{"no portrait clips, at the create", append([]string{"story", "create", "--prompt", "p", "--portrait", "--scene-model", "1=video-01"}, two...), exitError,
			[]string{"mediagen story create:", "scenes[0].model: model video-01 makes no portrait clips"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := mediagen(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stdout %q, stderr %q", code, tt.code, stdout, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
		})
	}
}
