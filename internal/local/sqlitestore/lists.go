package sqlitestore

import (
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// listWhere is the window condition shared by both lists: the account and
// the position after the cursor, newest first (id breaking ties), one row
// more than the query's window to know whether more follow. The filters
// are applied to the window's rows (windowPage), as the DynamoDB adapter
// applies them to the records its index window names, so both stores
// examine the same records and give the same pages.
func listWhere(q store.ListQuery, idCol string) (string, []any, error) {
	c, ok, err := store.ParseCursor(q.Cursor)
	if err != nil {
		return "", nil, err
	}
	where, args := `WHERE user_id = ?`, []any{q.UserID}
	if ok {
		t := formatTime(c.CreatedAt)
		where += ` AND (created_at < ? OR (created_at = ? AND ` + idCol + ` < ?))`
		args = append(args, t, t, c.ID)
	}
	where += ` ORDER BY created_at DESC, ` + idCol + ` DESC LIMIT ?`
	args = append(args, q.Window()+1)
	return where, args, nil
}

// windowPage is the page of a window read with one row more than window:
// the rows that match, made into a page by store.WindowPage.
func windowPage[T any](rows []T, window, limit int, matches func(T) bool, cursorOf func(T) store.Cursor) store.Page[T] {
	more := len(rows) > window
	if more {
		rows = rows[:window]
	}
	if len(rows) == 0 {
		return store.Page[T]{}
	}
	var matched []T
	for _, r := range rows {
		if matches(r) {
			matched = append(matched, r)
		}
	}
	return store.WindowPage(matched, limit, cursorOf, cursorOf(rows[len(rows)-1]), more)
}
