package store

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/shared/domain"
)

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

// Page is one page of records and the cursor of the next ("" at the end).
type Page[T any] struct {
	Items []T
	Next  string
}

// Cursor is a position in a newest-first list: the creation time and id of
// the last record returned. It travels as opaque base64url JSON.
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

// PageOf is the page of a newest-first query that read up to limit+1
// items: the first limit, and the cursor after the last of them when there
// was one more.
func PageOf[T any](items []T, limit int, cursorOf func(T) Cursor) Page[T] {
	if len(items) <= limit {
		return Page[T]{Items: items}
	}
	items = items[:limit]
	return Page[T]{Items: items, Next: cursorOf(items[limit-1]).Encode()}
}
