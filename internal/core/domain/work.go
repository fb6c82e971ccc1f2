package domain

import "fmt"

// Work is a record of paid work, a generation or a long video, as the use
// cases the two kinds share read it: lookup (OwnedBy), cancel
// (Cancelable), removal of its outputs (media.Outputs) and settlement
// (Settle).
type Work struct {
	// Noun names the kind in messages: "generation", "video".
	Noun   string
	ID     string
	UserID string
	Status Status
	Files  StoredFiles
}

// Work is the generation as a work; its id is the UUID.
func (g Generation) Work() Work {
	return Work{Noun: "generation", ID: g.UUID, UserID: g.UserID, Status: g.Status, Files: g.Files}
}

// Work is the long video as a work.
func (v LongVideo) Work() Work {
	return Work{Noun: "video", ID: v.ID, UserID: v.UserID, Status: v.Status, Files: v.Files}
}

// String names the record in messages: "generation <uuid>".
func (w Work) String() string { return w.Noun + " " + w.ID }

// OwnedBy is nil for a caller's own work. Another owner's is not found,
// exactly like a missing one, so ids reveal nothing across accounts.
func (w Work) OwnedBy(userID string) error {
	if w.UserID != userID {
		return fmt.Errorf("%s: %w", w, ErrNotFound)
	}
	return nil
}

// Cancelable is nil while a cancel can still stop the work. A final work
// is a conflict, and so is one storing its outputs (ErrFinishing): a
// cancel never undoes work whose outputs exist.
func (w Work) Cancelable() error {
	switch {
	case w.Status.Terminal():
		return fmt.Errorf("%w: %s is already %s", ErrConflict, w, w.Status)
	case w.Files.Finishing:
		return w.Finishing()
	}
	return nil
}

// Finishing is the answer to a cancel of work storing its outputs, also
// when the cancel finds it so only at its write.
func (w Work) Finishing() error {
	return fmt.Errorf("%w: %s is storing its outputs; it completes and is charged (or, if that fails, fails and is not)",
		ErrFinishing, w)
}
