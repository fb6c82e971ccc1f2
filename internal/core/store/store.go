// Package store declares what the service keeps and the guarantees each
// adapter gives. Use cases declare the narrower interfaces they need; the
// interfaces here are the full contract that the conformance suite
// (storetest) checks on every adapter.
//
// Each aggregate has a file of its name (ledger.go, generations.go,
// longvideos.go, slots.go, idempotency.go, keys.go, …), and the adapters and
// the conformance suite are cut the same way, so that one aggregate reads in
// the same file of each package.
package store

// Store is everything an adapter provides.
type Store interface {
	Accounts
	Ledger
	Journal
	APIKeys
	Generations
	LongVideos
	PollChains
	RateLimits
	Webhooks
	Idempotency
	Slots
	Streams
}
