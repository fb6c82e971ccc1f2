package domain

import (
	"errors"
	"testing"
)

func TestWorkAnswersLookupAndCancelAlikeForBothKinds(t *testing.T) {
	tests := []struct {
		name       string
		work       Work
		caller     string
		wantFound  bool
		wantCancel error // nil: a cancel may stop it
	}{
		{"a generation running, its owner", Generation{UUID: "g1", UserID: "u1", Status: StatusProcessing}.Work(), "u1", true, nil},
		{"a generation, another account", Generation{UUID: "g1", UserID: "u1", Status: StatusProcessing}.Work(), "u2", false, nil},
		{"a generation completed", Generation{UUID: "g1", UserID: "u1", Status: StatusCompleted}.Work(), "u1", true, ErrConflict},
		{"a generation storing its outputs", Generation{UUID: "g1", UserID: "u1", Status: StatusProcessing, Files: StoredFiles{Finishing: true}}.Work(), "u1", true, ErrFinishing},
		{"a video running, its owner", LongVideo{ID: "v1", UserID: "u1", Status: StatusProcessing}.Work(), "u1", true, nil},
		{"a video, another account", LongVideo{ID: "v1", UserID: "u1", Status: StatusProcessing}.Work(), "u2", false, nil},
		{"a video canceled", LongVideo{ID: "v1", UserID: "u1", Status: StatusCanceled}.Work(), "u1", true, ErrConflict},
		{"a video storing its final video", LongVideo{ID: "v1", UserID: "u1", Status: StatusProcessing, Files: StoredFiles{Finishing: true}}.Work(), "u1", true, ErrFinishing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.work.OwnedBy(tt.caller)
			if found := err == nil; found != tt.wantFound || (!found && !errors.Is(err, ErrNotFound)) {
				t.Errorf("OwnedBy(%s) = %v, want found %v (else ErrNotFound)", tt.caller, err, tt.wantFound)
			}
			err = tt.work.Cancelable()
			switch {
			case tt.wantCancel == nil && err != nil:
				t.Errorf("Cancelable() = %v, want nil", err)
			case tt.wantCancel != nil && !errors.Is(err, tt.wantCancel):
				t.Errorf("Cancelable() = %v, want %v", err, tt.wantCancel)
			}
			if tt.wantCancel == ErrConflict && errors.Is(err, ErrFinishing) {
				t.Errorf("Cancelable() = %v: a final work is no longer finishing", err)
			}
		})
	}
}
