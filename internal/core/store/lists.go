package store

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// ExamineLimit is the most records a filtered page examines after its
// cursor, whatever the account's history: a page costs what the largest
// unfiltered page costs (one BatchGetItem on DynamoDB), not what the
// account ever made. Those it examines and that do not match are skipped,
// so a filtered page may hold fewer than its limit, even none, with a
// cursor that goes on after the last record examined; paging until the
// cursor is "" still sees every matching record exactly once. Both stores
// examine the same records, so a client meets short pages locally too.
const ExamineLimit = 100

// ListQuery selects one page of an account's records.
type ListQuery struct {
	UserID string
	// Status and Model filter the records when set; Model matches either
	// the model or the model version.
	Status domain.Status
	Model  string
	Limit  int
	// Cursor is the Next of the previous page ("" for the first page).
	Cursor string
}

// Filtered says whether the query has a filter, and so examines
// ExamineLimit records rather than its Limit.
func (q ListQuery) Filtered() bool { return q.Status != "" || q.Model != "" }

// Window is how many records a page of the query examines.
func (q ListQuery) Window() int { return window(q.Limit, q.Filtered()) }

// Matches applies the query's filters to a record of that status whose
// model is any of models (a generation's model and its version).
func (q ListQuery) Matches(status domain.Status, models ...string) bool {
	if q.Status != "" && status != q.Status {
		return false
	}
	return q.Model == "" || slices.Contains(models, q.Model)
}

func window(limit int, filtered bool) int {
	limit = max(limit, 1)
	if filtered {
		return max(limit, ExamineLimit)
	}
	return limit
}

// Page is one page of records and the cursor of the next ("" at the end).
// A filtered page may hold fewer items than asked, even none, and still
// have a next (see ExamineLimit).
type Page[T any] struct {
	Items []T
	Next  string
}

// Cursor is a position in a newest-first list: the creation time and id of
// the last record returned, or examined when a filtered page ended short.
// It travels as opaque base64url JSON.
type Cursor struct {
	CreatedAt time.Time `json:"t"`
	ID        string    `json:"i"`
}

// Encode makes the cursor's opaque form.
func (c Cursor) Encode() string {
	b, _ := json.Marshal(c) // a time and a string always encode
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor reads an opaque cursor; "" is the start of the list.
func ParseCursor(s string) (Cursor, bool, error) {
	if s == "" {
		return Cursor{}, false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c Cursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.ID == "" || c.CreatedAt.IsZero() || len(c.ID) > 64 {
		return Cursor{}, false, fmt.Errorf("%w: cursor is not one this API gave out", domain.ErrInvalid)
	}
	return c, true, nil
}

// WindowPage is the page of a query that examined a window of records,
// newest first: matched are those of the window that pass its filters, in
// order, last the position of the window's last record, and more whether
// any record follows the window. The page is the first limit matches; its
// cursor follows the last of them when the window held more matches than
// that, else the last record examined when more follow, else it ends.
// Without a filter the window is the limit, so the page is full unless the
// list ended.
func WindowPage[T any](matched []T, limit int, cursorOf func(T) Cursor, last Cursor, more bool) Page[T] {
	limit = max(limit, 1)
	switch {
	case len(matched) > limit:
		return Page[T]{Items: matched[:limit], Next: cursorOf(matched[limit-1]).Encode()}
	case more:
		return Page[T]{Items: matched, Next: last.Encode()}
	default:
		return Page[T]{Items: matched}
	}
}
