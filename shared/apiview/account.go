package apiview

// Account is the answer of GET /api/account: the caller's account.
type Account struct {
	UserID    string          `json:"user_id"`
	Plan      string          `json:"plan"`
	Balance   string          `json:"balance"`
	Held      string          `json:"held"`
	RateLimit RateLimit       `json:"rate_limit"`
	Usage     Usage           `json:"usage"`
	Webhooks  AccountWebhooks `json:"webhooks"`
	Outputs   AccountOutputs  `json:"outputs"`
}

// AccountOutputs says how long the account's outputs are kept.
type AccountOutputs struct {
	RetentionDays int `json:"retention_days"`
}

// RateLimit is the account's request limit.
type RateLimit struct {
	RequestsPerMinute int `json:"requests_per_minute"`
}

// Usage is what the account spent this calendar month (UTC).
type Usage struct {
	Month   string `json:"month"`
	Credits string `json:"credits"`
	Jobs    int    `json:"jobs"`
}

// AccountWebhooks carries the secret that signs the account's webhooks.
type AccountWebhooks struct {
	SigningSecret string `json:"signing_secret"`
}
