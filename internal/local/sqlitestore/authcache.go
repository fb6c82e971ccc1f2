package sqlitestore

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// epochFileName names the data directory's auth epoch: a file that every
// change of what authentication reads (today: a key's revocation) replaces,
// from whichever process made it (the server, or the admin command beside
// it).
const epochFileName = "auth-epoch"

// maxCachedKeys bounds the cache; past it, it starts again empty.
const maxCachedKeys = 10_000

// maxCacheAge bounds how long an answer is kept even when the epoch never
// moves: a backstop should a revocation's epoch bump be lost.
const maxCacheAge = time.Minute

// authCache keeps what GetAPIKeyAccount read, so the status path's
// authentication costs a small file read instead of a statement. A key and
// its account's plan and limit change only when the key is revoked, and a
// revocation replaces the epoch file after its commit: a request that
// reads the epoch before its lookup sees every revocation committed before
// it, as an uncached read would.
type authCache struct {
	path  string
	file  *epochFile
	mu    sync.Mutex
	epoch string
	keys  map[string]keyAccount
}

type keyAccount struct {
	key  domain.APIKey
	acct domain.Account
	// read is when it was read, for maxCacheAge.
	read time.Time
}

func newAuthCache(dir string) *authCache {
	path := filepath.Join(dir, epochFileName)
	return &authCache{path: path, file: newEpochFile(path), keys: map[string]keyAccount{}}
}

// currentEpoch reads the epoch; "" (unreadable) means nothing is cached.
func (c *authCache) currentEpoch() string { return c.file.read() }

// get is the cached answer for hash under epoch.
func (c *authCache) get(epoch, hash string) (keyAccount, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch == "" || epoch != c.epoch {
		c.epoch, c.keys = epoch, map[string]keyAccount{}
		return keyAccount{}, false
	}
	v, ok := c.keys[hash]
	if ok && time.Since(v.read) > maxCacheAge {
		delete(c.keys, hash)
		return keyAccount{}, false
	}
	return v, ok
}

// put caches an answer read under epoch, unless the epoch moved meanwhile.
func (c *authCache) put(epoch, hash string, v keyAccount) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch == "" || epoch != c.epoch {
		return
	}
	if len(c.keys) >= maxCachedKeys {
		c.keys = map[string]keyAccount{}
	}
	v.read = time.Now()
	c.keys[hash] = v
}

// bump replaces the epoch (a new random value, renamed into place so a
// reader sees the old file or the new one whole).
func (c *authCache) bump() error {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.path), epochFileName+".*")
	if err != nil {
		return fmt.Errorf("auth epoch: %w", err)
	}
	_, werr := tmp.WriteString(hex.EncodeToString(b))
	if err := tmp.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), c.path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("auth epoch: %w", werr)
	}
	return nil
}

// forget drops a cached answer, so the next read of hash is the stored one.
func (c *authCache) forget(hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.keys, hash)
}
