//go:build !unix

package sqlitestore

import "os"

func readEpoch(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(raw)
}
