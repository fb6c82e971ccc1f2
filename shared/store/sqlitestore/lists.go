package sqlitestore

import (
	"strings"

	"github.com/mediagen-dev/mediagen/shared/store"
)

// listWhere is the page condition shared by both lists: the account, the
// filters, and the position after the cursor (newest first, id breaking ties).
func listWhere(q store.ListQuery, idCol string, modelCols ...string) (string, []any, error) {
	c, ok, err := store.ParseCursor(q.Cursor)
	if err != nil {
		return "", nil, err
	}
	where, args := `WHERE user_id = ?`, []any{q.UserID}
	if q.Status != "" {
		where += ` AND status = ?`
		args = append(args, string(q.Status))
	}
	if q.Model != "" {
		where += ` AND (` + strings.Join(modelCols, ` = ? OR `) + ` = ?)`
		for range modelCols {
			args = append(args, q.Model)
		}
	}
	if ok {
		t := formatTime(c.CreatedAt)
		where += ` AND (created_at < ? OR (created_at = ? AND ` + idCol + ` < ?))`
		args = append(args, t, t, c.ID)
	}
	where += ` ORDER BY created_at DESC, ` + idCol + ` DESC LIMIT ?`
	// One more than asked, to know whether a next page exists.
	args = append(args, q.Limit+1)
	return where, args, nil
}
