package media

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// fakeObjects is a bucket in memory whose next Keys or Delete can fail.
type fakeObjects struct {
	keys           []string
	failList       error
	failDelete     error
	lists, deletes int
}

func (f *fakeObjects) Keys(_ context.Context, prefix string) ([]string, error) {
	f.lists++
	if err := f.failList; err != nil {
		f.failList = nil
		return nil, err
	}
	var out []string
	for _, k := range f.keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out, nil
}

func (f *fakeObjects) Delete(_ context.Context, keys []string) error {
	f.deletes++
	if err := f.failDelete; err != nil {
		f.failDelete = nil
		return err
	}
	f.keys = slices.DeleteFunc(f.keys, func(k string) bool { return slices.Contains(keys, k) })
	return nil
}

// fakeRecord is a record's removal state, moved as the stores move it.
type fakeRecord struct {
	status  domain.Status
	removal domain.Removal
	failTo  domain.Removal // the next move to this state fails
}

func (r *fakeRecord) mark(_ context.Context, to domain.Removal) error {
	if to == r.failTo {
		r.failTo = ""
		return errors.New("store unavailable")
	}
	switch {
	case to == domain.RemovalRemoving && r.status == domain.StatusProcessing:
		return domain.ErrConflict
	case to == domain.RemovalRemoving && r.removal == domain.RemovalRemoved:
	case to == domain.RemovalRemoved && r.removal == domain.RemovalNone:
		return domain.ErrConflict
	default:
		r.removal = to
	}
	return nil
}

func (r *fakeRecord) filesOf() filesOf {
	return filesOf{What: "generation g1", Status: r.status, Files: domain.StoredFiles{Removal: r.removal},
		Prefix: GenerationPrefix("g1"), Mark: r.mark}
}

// TestRemoveFilesNeverClaimsRemovedWhileFilesRemain: whichever step fails
// (a crash there), the record is never removed while a file of it is left,
// and a repeat of the request finishes the job; other records' files are
// never touched.
func TestRemoveFilesNeverClaimsRemovedWhileFilesRemain(t *testing.T) {
	other := "generations/g2/0.png"
	tests := []struct {
		name  string
		crash func(*fakeObjects, *fakeRecord)
		// firstRemoval is the record's state after the failed attempt.
		firstRemoval domain.Removal
	}{
		{"no failure", func(*fakeObjects, *fakeRecord) {}, domain.RemovalRemoved},
		{"marking removing fails", func(_ *fakeObjects, r *fakeRecord) { r.failTo = domain.RemovalRemoving }, domain.RemovalNone},
		{"listing fails", func(o *fakeObjects, _ *fakeRecord) { o.failList = errors.New("timeout") }, domain.RemovalRemoving},
		{"deleting fails", func(o *fakeObjects, _ *fakeRecord) { o.failDelete = errors.New("timeout") }, domain.RemovalRemoving},
		{"marking removed fails", func(_ *fakeObjects, r *fakeRecord) { r.failTo = domain.RemovalRemoved }, domain.RemovalRemoving},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := &fakeObjects{keys: []string{"generations/g1/0.png", "generations/g1/1.png", other}}
			rec := &fakeRecord{status: domain.StatusCompleted}
			tt.crash(objects, rec)
			err := removeFiles(context.Background(), objects, rec.filesOf())
			if (err == nil) != (tt.firstRemoval == domain.RemovalRemoved) || rec.removal != tt.firstRemoval {
				t.Fatalf("first attempt: %v, removal %q; want removal %q", err, rec.removal, tt.firstRemoval)
			}
			if rec.removal == domain.RemovalRemoved && len(objects.keys) != 1 {
				t.Fatalf("removed while files remain: %v", objects.keys)
			}
			if err := removeFiles(context.Background(), objects, rec.filesOf()); err != nil {
				t.Fatalf("the repeat: %v", err)
			}
			if rec.removal != domain.RemovalRemoved || !slices.Equal(objects.keys, []string{other}) {
				t.Errorf("after the repeat: removal %q, objects %v; want removed, only %s left", rec.removal, objects.keys, other)
			}
			lists := objects.lists
			if err := removeFiles(context.Background(), objects, rec.filesOf()); err != nil || objects.lists != lists {
				t.Errorf("a repeat once removed: %v, listed again %v; want nothing done", err, objects.lists != lists)
			}
		})
	}
}

func TestRemoveFilesOfWorkInProgressIsAConflictAndChangesNothing(t *testing.T) {
	objects := &fakeObjects{keys: []string{"generations/g1/0.png"}}
	rec := &fakeRecord{status: domain.StatusProcessing}
	err := removeFiles(context.Background(), objects, rec.filesOf())
	if !errors.Is(err, domain.ErrConflict) || rec.removal != domain.RemovalNone || len(objects.keys) != 1 || objects.lists != 0 {
		t.Errorf("RemoveFiles of a processing record = %v, removal %q, objects %v, listed %d times; want a conflict and nothing changed",
			err, rec.removal, objects.keys, objects.lists)
	}
}

// fakeRetainer records the tags given to the objects of a fakeObjects.
type fakeRetainer struct {
	*fakeObjects
	tagged map[string]map[string]string
}

func (f *fakeRetainer) Tag(_ context.Context, key string, tags map[string]string) error {
	if f.tagged == nil {
		f.tagged = map[string]map[string]string{}
	}
	f.tagged[key] = tags
	return nil
}

func TestKeepForTagsOnlyAShorterRetentionAndOnlyTheRecordsObjects(t *testing.T) {
	tests := []struct {
		name    string
		days    int
		want    []string
		wantErr error
	}{
		{"the default needs no tag", domain.DefaultRetentionDays, nil, nil},
		{"a shorter one tags every object of the record", 7, []string{"generations/g1/0.png", "generations/g1/1.png"}, nil},
		{"a retention not offered", 90, nil, domain.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &fakeRetainer{fakeObjects: &fakeObjects{keys: []string{"generations/g1/0.png", "generations/g1/1.png", "generations/g2/0.png"}}}
			err := KeepFor(context.Background(), r, GenerationPrefix("g1"), tt.days)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("KeepFor = %v, want %v", err, tt.wantErr)
			}
			var got []string
			for k, tags := range r.tagged {
				got = append(got, k)
				if tags[domain.RetentionTag] != "7" {
					t.Errorf("%s tagged %v", k, tags)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("tagged %v, want %v", got, tt.want)
			}
		})
	}
	if err := KeepFor(context.Background(), nil, GenerationPrefix("g1"), 1); err == nil {
		t.Error("KeepFor without a bucket to tag in succeeded")
	}
}

// fakeCDN records the invalidations asked of it; the objects left in the
// bucket at each call tell whether it came after the delete.
type fakeCDN struct {
	objects *fakeObjects
	calls   [][]string
	leftAt  [][]string
	fail    error
}

func (f *fakeCDN) Invalidate(_ context.Context, paths []string) error {
	f.calls = append(f.calls, slices.Clone(paths))
	f.leftAt = append(f.leftAt, slices.Clone(f.objects.keys))
	return f.fail
}

// TestRemoveFilesInvalidatesTheRecordsPathsAtTheCDN: once a record's files
// are deleted the CDN is asked to drop exactly the record's paths (its
// prefix, whatever was listed: a repeat after a crash lists nothing), and
// never for a record whose files were not deleted. A CDN that fails does
// not fail the delete: the files are gone, the cached copies expire.
func TestRemoveFilesInvalidatesTheRecordsPathsAtTheCDN(t *testing.T) {
	ctx := context.Background()
	other := "generations/g2/0.png"
	for _, tt := range []struct {
		name      string
		status    domain.Status
		removal   domain.Removal
		cdnFails  bool
		wantCalls int
		wantErr   bool
	}{
		{"a completed record", domain.StatusCompleted, domain.RemovalNone, false, 1, false},
		{"a repeat after a crash while removing", domain.StatusFailed, domain.RemovalRemoving, false, 1, false},
		{"the CDN fails", domain.StatusCompleted, domain.RemovalNone, true, 1, false},
		{"a record removed already", domain.StatusCompleted, domain.RemovalRemoved, false, 0, false},
		{"a record still processing", domain.StatusProcessing, domain.RemovalNone, false, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objects := &fakeObjects{keys: []string{"generations/g1/0.png", "generations/g1/1.png", other}}
			cdn := &fakeCDN{objects: objects}
			if tt.cdnFails {
				cdn.fail = errors.New("throttled")
			}
			rec := &fakeRecord{status: tt.status, removal: tt.removal}
			files := rec.filesOf()
			files.CDN = cdn
			err := removeFiles(ctx, objects, files)
			if (err != nil) != tt.wantErr {
				t.Fatalf("RemoveFiles: %v", err)
			}
			if len(cdn.calls) != tt.wantCalls {
				t.Fatalf("invalidations %v, want %d", cdn.calls, tt.wantCalls)
			}
			if tt.wantCalls == 0 {
				return
			}
			if want := []string{"/generations/g1/*"}; !slices.Equal(cdn.calls[0], want) {
				t.Errorf("invalidated %v, want %v: the record's paths, and no other record's", cdn.calls[0], want)
			}
			if !slices.Equal(cdn.leftAt[0], []string{other}) {
				t.Errorf("invalidated while %v were in the bucket; want it after the delete, or the CDN fetches them again", cdn.leftAt[0])
			}
			if rec.removal != domain.RemovalRemoved {
				t.Errorf("removal %q, want removed", rec.removal)
			}
		})
	}
}

// TestUncachingDeleterDropsThePublishedFilesItDeletedFromTheCDN: the files
// a regenerate replaced are deleted (DeleteServed) and then, of them,
// those the API handed out (a revision's final video and captions, not a
// scene's clip) leave the CDN's caches; a CDN that fails does not fail
// the delete, a delete that fails asks the CDN nothing, and files never
// served (Delete) are deleted without an invalidation.
func TestUncachingDeleterDropsThePublishedFilesItDeletedFromTheCDN(t *testing.T) {
	const video = "6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43"
	replaced := []string{FinalVideoKeyAt(video, 2), CaptionsKeyAt(video, 2), "long-videos/" + video + "/scenes/002-r2.mp4"}
	kept := FinalVideoKeyAt(video, 3)
	for _, tt := range []struct {
		name               string
		failDelete, failCD error
		wantErr            bool
		wantLeft           []string
		wantPaths          [][]string
		neverServed        bool
	}{
		{name: "deleted, then uncached", wantLeft: []string{kept},
			wantPaths: [][]string{{"/" + replaced[0], "/" + replaced[1]}}},
		{name: "the CDN fails", failCD: errors.New("throttled"), wantLeft: []string{kept},
			wantPaths: [][]string{{"/" + replaced[0], "/" + replaced[1]}}},
		{name: "the delete fails", failDelete: errors.New("timeout"), wantErr: true, wantLeft: append(slices.Clone(replaced), kept)},
		{name: "never served", neverServed: true, wantLeft: []string{kept}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objects := &fakeObjects{keys: append(slices.Clone(replaced), kept), failDelete: tt.failDelete}
			cdn := &fakeCDN{objects: objects, fail: tt.failCD}
			d := UncachingDeleter{Objects: objects, CDN: cdn}
			del := d.DeleteServed
			if tt.neverServed {
				del = d.Delete
			}
			err := del(context.Background(), replaced)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Delete = %v; want an error: %v", err, tt.wantErr)
			}
			if !slices.Equal(objects.keys, tt.wantLeft) {
				t.Errorf("left %v; want %v", objects.keys, tt.wantLeft)
			}
			if !slices.EqualFunc(cdn.calls, tt.wantPaths, slices.Equal) {
				t.Errorf("invalidated %v; want %v", cdn.calls, tt.wantPaths)
			}
			for i, left := range cdn.leftAt {
				if slices.ContainsFunc(replaced, func(k string) bool { return slices.Contains(left, k) }) {
					t.Errorf("invalidation %d came while %v was still stored: the CDN could fetch it again", i, left)
				}
			}
		})
	}
}
