package apiview

// ListPage is the answer of the list routes.
type ListPage[T any] struct {
	Data []T `json:"data"`
	// NextCursor fetches the next page (as ?cursor=); null on the last.
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

// ListOf is the page of items; next, when not empty, is the cursor of the
// page after it.
func ListOf[T any](items []T, next string) ListPage[T] {
	p := ListPage[T]{Data: items}
	if p.Data == nil {
		p.Data = []T{}
	}
	if next != "" {
		p.NextCursor, p.HasMore = &next, true
	}
	return p
}
