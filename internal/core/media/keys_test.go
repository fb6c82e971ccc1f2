package media

import "testing"

func TestAFinalVideoOfEachRevisionIsPublishedBesideItsCaptions(t *testing.T) {
	const id = "6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43"
	if FinalVideoKeyAt(id, 1) != FinalVideoKey(id) || CaptionsKeyAt(id, 1) != CaptionsKey(id) {
		t.Errorf("revision 1 is at %s and %s, want the first render's keys", FinalVideoKeyAt(id, 1), CaptionsKeyAt(id, 1))
	}
	for _, rev := range []int{1, 2, 9, 10, 1000} {
		final, captions := FinalVideoKeyAt(id, rev), CaptionsKeyAt(id, rev)
		if !Published(final) || !Published(captions) {
			t.Errorf("revision %d: %s published %v, %s published %v; want both", rev, final, Published(final), captions, Published(captions))
		}
		base := "https://cdn.example/"
		if got := captionsURL(base + final); got != base+captions {
			t.Errorf("revision %d: the captions beside %s are at %q, want %s", rev, final, got, base+captions)
		}
		if rev > 1 && final == FinalVideoKey(id) {
			t.Errorf("revision %d is stored over the first render's %s", rev, final)
		}
	}
	for _, key := range []string{
		"long-videos/" + id + "/r2/scenes/002.mp4", "long-videos/" + id + "/r0/final.mp4", "long-videos/" + id + "/r1/final.mp4",
		"long-videos/" + id + "/r02/final.mp4", "long-videos/" + id + "/scenes/002-r2.mp4", "long-videos/" + id + "/r2/r3/final.mp4",
	} {
		if Published(key) {
			t.Errorf("%s is published; want only the final files and captions", key)
		}
	}
}
